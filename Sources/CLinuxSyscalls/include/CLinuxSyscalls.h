#ifndef MDQ_CLINUXSYSCALLS_H
#define MDQ_CLINUXSYSCALLS_H
#include <stdint.h>
#include <stddef.h>
#include "mdq_sandbox.h"

/// The subset of `struct statx` the index keeps, flattened so that Swift
/// never sees the kernel's struct layout.
typedef struct mdq_file_status {
    uint64_t inode;
    uint64_t size;
    int64_t modification_seconds;
    uint32_t modification_nanoseconds;
    uint32_t birth_nanoseconds;
    int64_t birth_seconds;
    uint32_t device_major;
    uint32_t device_minor;
    uint32_t mode;
    /// Non-zero when the filesystem reported a birth time.
    uint32_t has_birth_time;
    int64_t access_seconds;
    uint32_t access_nanoseconds;
    uint32_t uid;
    uint32_t gid;
} mdq_file_status;

/// statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC | extra_flags).
/// Returns 0, or -1 with errno set.
int mdq_statx(int dirfd, const char *name, int extra_flags, mdq_file_status *out);

/// The POSIX access ACL (the `system.posix_acl_access` attribute, in the
/// kernel's format) of the folder or file `name` in `dirfd` (`name` empty: `dirfd`
/// itself; `dirfd` AT_FDCWD: `name` is a path), symlinks not followed.
/// Returns its length, or -1 with errno set (ENODATA: it has none).
long mdq_folder_acl(int dirfd, const char *name, void *value, size_t size);

/// pipe2(2) with both ends non-blocking and closed on exec, at once (no
/// window for a concurrent fork and exec to inherit them).
int mdq_wake_pipe(int fds[2]);

/// getdents64(2). Returns bytes read, 0 at the end, or -1 with errno set.
long mdq_getdents64(int fd, void *buffer, size_t count);

/// Names the calling thread (at most 15 bytes are kept), for `top -H`
/// and debuggers. pthread_setname_np needs _GNU_SOURCE, which Swift's
/// Glibc module does not define.
void mdq_set_thread_name(const char *name);

/* Lowers the calling thread's (not the process's) CPU priority to `nice`
 * and its I/O priority to the lowest of the best-effort class. Unprivileged
 * threads cannot raise it back: call it on threads that end with their
 * work. Returns 0, or -1 with errno. */
int mdq_lower_thread_priority(int nice);

/// The user and process at the other end of a connected Unix socket
/// (SO_PEERCRED). Returns 0, or -1 with errno set.
int mdq_peer_credentials(int fd, uint32_t *uid, int32_t *pid);

/// The primary group (SO_PEERCRED) and supplementary groups
/// (SO_PEERGROUPS, as they were when it connected) of the process at the
/// other end of a Unix socket: up to `capacity` groups into `groups`.
/// Returns the number of supplementary groups, or -1 with errno set
/// (ERANGE when there are more than `capacity`).
int mdq_peer_groups(int fd, uint32_t *primary, uint32_t *groups, int capacity);

/// sendmsg(2) of `length` bytes on a connected Unix socket with `count`
/// descriptors attached (SCM_RIGHTS), MSG_NOSIGNAL: the kernel hands the
/// descriptors over with the first byte. Returns the bytes sent (the
/// caller sends any rest without descriptors), or -1 with errno set.
long mdq_send_with_descriptors(int socket, const void *bytes, size_t length, const int *descriptors, int count);

/// recvmsg(2) of up to `length` bytes, taking descriptors sent with them
/// (SCM_RIGHTS, close-on-exec) into `descriptors`, at most `capacity`:
/// `*received` is how many arrived. Descriptors beyond `capacity` (the
/// kernel truncates the control data: MSG_CTRUNC) are closed by the kernel
/// and `*truncated` is set. Returns the bytes read, 0 at the end, or -1
/// with errno set.
long mdq_receive_with_descriptors(
    int socket, void *bytes, size_t length, int *descriptors, int capacity, int *received, int *truncated);

/// The id of the mount the open file `fd` was reached through, as
/// /proc/self/mountinfo numbers mounts (read from /proc/self/fdinfo, which
/// asks nothing of the file's filesystem). Returns it, or -1 with errno set.
long long mdq_descriptor_mount_id(int fd);

/// open(path, O_PATH | O_DIRECTORY | O_CLOEXEC): a folder named by the
/// caller's own rights (searching the folders above it), to pass to a
/// service (O_PATH needs _GNU_SOURCE). Returns the descriptor, or -1 with
/// errno set.
int mdq_open_folder_path(const char *path);

/// The path the kernel gives the open file `fd` (readlink of
/// /proc/self/fd/N): up to `capacity` bytes, not NUL-terminated. Returns
/// the length, or -1 with errno set (ENAMETOOLONG when longer).
long mdq_descriptor_path(int fd, char *path, size_t capacity);

/// Returns the heap's free pages to the kernel (glibc's malloc_trim(0)).
void mdq_release_free_memory(void);

/// glibc's malloc for a long-running process: at most `arenas` arenas
/// (M_ARENA_MAX), and a fixed 1 MiB mmap threshold (M_MMAP_THRESHOLD), so
/// big buffers are unmapped when freed instead of staying in the heap.
void mdq_tune_malloc_for_daemon(int arenas);

/// fgetxattr(2) and flistxattr(2) (<sys/xattr.h> is not in Swift's Glibc
/// module). Return the length, or -1 with errno set.
long mdq_fgetxattr(int fd, const char *name, void *value, size_t size);
long mdq_flistxattr(int fd, char *list, size_t size);

/// Confines the calling process for untrusted work (an import worker):
/// address space at most `memory_bytes`, CPU time at most `cpu_seconds`
/// (SIGXCPU, then SIGKILL a second later), no file written (RLIMIT_FSIZE 0),
/// no core dump, lowest CPU priority (nice 19) and the idle I/O class, no
/// new privileges on exec, and death when the parent dies. Returns 0, or -1
/// with errno set by the first call that failed.
int mdq_confine_worker(unsigned long long memory_bytes, unsigned long cpu_seconds);
/// Blocks until the peer of socket `fd` hangs up, then ends the process.
void mdq_exit_when_peer_hangs_up(int fd);

/// pipe2(fds, O_CLOEXEC): a pipe no other child inherits (pipe2 needs
/// _GNU_SOURCE). Returns 0, or -1 with errno set.
int mdq_pipe_cloexec(int fds[2]);

/// posix_spawn_file_actions_addclosefrom_np(actions, from): the child
/// closes every descriptor from `from` up (glibc 2.34+, needs _GNU_SOURCE).
/// Returns 0 or an error number.
int mdq_spawn_close_from(void *actions, int from);

/// memfd_create(name, MFD_CLOEXEC): an anonymous file, gone with its last
/// descriptor (needs _GNU_SOURCE). Returns the descriptor, or -1 with errno.
int mdq_anonymous_file(const char *name);

/// Keeps only the capabilities in `keep` (a bit per capability number):
/// drops the others from the bounding set, and makes `keep` the permitted
/// and effective sets (none inheritable). Returns 0, or -1 with errno set.
int mdq_keep_only_capabilities(uint64_t keep);

/// Becomes `user` and `group` (real, effective and saved), with no
/// supplementary groups, and undumpable (no process of that user's may
/// trace this one or open its descriptors through /proc). 0, or -1 with
/// errno.
int mdq_become_user(uint32_t user, uint32_t group);

/// fanotify_init(2) for a whole-filesystem notification group reporting
/// directory file handles and names (FAN_CLASS_NOTIF |
/// FAN_REPORT_DFID_NAME), close-on-exec, with the kernel's queue unbounded
/// when `unlimited_queue` is set (the reader bounds what it holds).
/// Returns the descriptor, or -1 with errno set.
int mdq_fanotify_init(int unlimited_queue);

/// fanotify_mark(2) adding (or with `remove`, removing) a filesystem mark
/// (FAN_MARK_FILESYSTEM) for directory-entry and content events on the
/// filesystem holding `path`. Returns 0, or -1 with errno set.
int mdq_fanotify_mark_filesystem(int fanotify, const char *path, int remove);

/// The file handle of the open file `fd` (name_to_handle_at with
/// AT_EMPTY_PATH) and its filesystem id (fstatfs's f_fsid, as fanotify
/// reports it): up to `capacity` handle bytes into `bytes`. Returns the
/// handle's length, or -1 with errno set (EOVERFLOW when longer than
/// `capacity`, EOPNOTSUPP when the filesystem has no handles).
int mdq_file_handle(int fd, uint64_t *fsid, int32_t *type, unsigned char *bytes, unsigned capacity);

/// Asks the CPU to fetch the cache line at `address` for reading (a hint:
/// never faults).
static inline void mdq_prefetch(const void *address) { __builtin_prefetch(address, 0, 3); }

#endif
