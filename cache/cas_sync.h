/* Deferred durability for the CAS (cas_sync.c).  A store normally fsyncs
 * each file before renaming it into place: one wait on the disk per entry,
 * and a compile stores eight to ten (its IR, key entries, the artifact's
 * files, their list).  In a batch (cv_cache_batch_begin) a commit renames
 * first and hands the still open file to a queue; the batch's end fsyncs
 * the whole queue at once, from several threads, so the waits overlap and
 * share the file system's journal commits.
 *
 * Why that is safe: readers verify every entry (header XXH3, a blob's
 * SHA-256), so a file that a power cut left empty or torn before its fsync
 * reads as corrupt, is removed and counts as a miss, exactly like an entry
 * evicted under an action that still names it; and whoever publishes an
 * entry beyond the cache (a farm worker reporting its artifact) does so
 * only after the batch ended.  The fsync after the rename also makes the
 * new name durable on ext4, XFS and btrfs. */
#ifndef CV_CACHE_CAS_SYNC_H
#define CV_CACHE_CAS_SYNC_H

typedef struct cv_cas_syncq cv_cas_syncq;

cv_cas_syncq *cv_cache_syncq_new(void);
/* Queues fd, open on the file now at path, and takes ownership of it.
 * Thread-safe.  0, or -1 when the queue is full or out of memory: fd then
 * stays the caller's, who syncs it itself. */
int cv_cache_syncq_add(cv_cas_syncq *q, int fd, const char *path);
/* Fsyncs and closes every queued fd, several at a time; the queue is empty
 * afterwards.  0, or the errno of a failed fsync. */
int cv_cache_syncq_run(cv_cas_syncq *q);
/* Closes every queued fd unsynced and hands over their paths instead
 * (*paths: malloc'd array of *n malloc'd strings); the queue is empty
 * afterwards.  0, or -1 out of memory (then nothing was handed over and
 * everything was synced: *n is 0). */
int cv_cache_syncq_detach(cv_cas_syncq *q, char ***paths, int *n);
/* Fsyncs files by path, several at a time (any descriptor of a file syncs
 * its data).  A file that is gone meanwhile (evicted) needs nothing.  0, or
 * the errno of a failure. */
int cv_cache_syncq_paths(char *const *paths, int n);
/* Runs what is still queued, then frees q. */
void cv_cache_syncq_free(cv_cas_syncq *q);

#endif
