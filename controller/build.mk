# controller/: git source (libgit2), build DB (SQLite), specs, planner.
PKGS += libgit2 sqlite3
