/* Test helper (header-only, for test_controller_gitsource.c and test_controller_planner.c): real
 * git repositories made with libgit2, commit by commit. */
#ifndef CV_TEST_GITREPO_H
#define CV_TEST_GITREPO_H

#include <git2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* One change in a commit: content NULL deletes the path. */
typedef struct trepo_file {
    const char *path, *content;
    unsigned mode;   /* 0 = regular file; GIT_FILEMODE_LINK, GIT_FILEMODE_BLOB_EXECUTABLE */
} trepo_file;

static inline void trepo_check(int rc, const char *what)
{
    if (rc < 0) {
        const git_error *e = git_error_last();
        fprintf(stderr, "%s: %s\n", what, e ? e->message : "?");
        abort();
    }
}

/* A non-bare repository whose first branch is main. */
static inline git_repository *trepo_init(const char *path)
{
    git_libgit2_init();
    git_repository *r = NULL;
    git_repository_init_options o;
    git_repository_init_options_init(&o, GIT_REPOSITORY_INIT_OPTIONS_VERSION);
    o.flags = GIT_REPOSITORY_INIT_MKPATH;
    o.initial_head = "main";
    trepo_check(git_repository_init_ext(&r, path, &o), "init");
    return r;
}

static inline void trepo_free(git_repository *r)
{
    git_repository_free(r);
    git_libgit2_shutdown();
}

/* Commits the changes on top of HEAD (or as the first commit); the commit
 * id goes to hex (41 bytes) when not NULL. */
static inline void trepo_commit(git_repository *r, const char *msg, const trepo_file *files, int n,
                         char *hex)
{
    static int64_t tick = 1700000000;
    git_index *idx;
    trepo_check(git_repository_index(&idx, r), "index");
    for (int i = 0; i < n; i++) {
        if (!files[i].content) {
            trepo_check(git_index_remove_bypath(idx, files[i].path), "remove");
            continue;
        }
        git_index_entry e;
        memset(&e, 0, sizeof e);
        e.path = files[i].path;
        e.mode = files[i].mode ? files[i].mode : GIT_FILEMODE_BLOB;
        trepo_check(git_index_add_from_buffer(idx, &e, files[i].content, strlen(files[i].content)),
                    "add");
    }
    trepo_check(git_index_write(idx), "write index");
    git_oid tree_id, commit_id;
    trepo_check(git_index_write_tree(&tree_id, idx), "write tree");
    git_tree *tree;
    trepo_check(git_tree_lookup(&tree, r, &tree_id), "tree");
    git_signature *sig;
    trepo_check(git_signature_new(&sig, "Test", "test@cuvil.dev", tick++, 0), "sig");
    git_commit *parent = NULL;
    git_reference *head = NULL;
    if (git_repository_head(&head, r) == 0)
        trepo_check(git_commit_lookup(&parent, r, git_reference_target(head)), "parent");
    const git_commit *parents[1] = {parent};
    trepo_check(git_commit_create(&commit_id, r, "HEAD", sig, sig, NULL, msg, tree, parent ? 1 : 0,
                                  parents),
                "commit");
    if (hex)
        git_oid_tostr(hex, 41, &commit_id);
    git_commit_free(parent);
    git_reference_free(head);
    git_signature_free(sig);
    git_tree_free(tree);
    git_index_free(idx);
}

/* The blob id git gives these bytes. */
/* Writes files into the working tree too (trepo_commit does not check
 * out), for tools that read it. */
static inline void trepo_write_worktree(const char *root, const trepo_file *files, int n)
{
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", root, files[i].path);
        for (char *s = strchr(path + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
            *s = 0;
            mkdir(path, 0755);
            *s = '/';
        }
        FILE *f = fopen(path, "w");
        if (!f || fputs(files[i].content, f) < 0 || fclose(f) != 0) {
            fprintf(stderr, "cannot write %s\n", path);
            abort();
        }
    }
}

static inline void trepo_blob_id(const char *content, char hex[41])
{
    git_oid oid;
    trepo_check(git_odb_hash(&oid, content, strlen(content), GIT_OBJECT_BLOB), "hash");
    git_oid_tostr(hex, 41, &oid);
}

#endif
