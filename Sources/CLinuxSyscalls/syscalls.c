#define _GNU_SOURCE
#include "CLinuxSyscalls.h"
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <grp.h>
#include <sys/fanotify.h>
#include <linux/capability.h>
#include <sys/vfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

int mdq_statx(int dirfd, const char *name, int extra_flags, mdq_file_status *out) {
    struct statx st;
    unsigned mask = STATX_TYPE | STATX_MODE | STATX_INO | STATX_SIZE | STATX_MTIME | STATX_BTIME | STATX_ATIME
        | STATX_UID | STATX_GID;
    int rc = statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC | extra_flags, mask, &st);
    if (rc != 0) return rc;
    out->inode = st.stx_ino;
    out->size = st.stx_size;
    out->modification_seconds = st.stx_mtime.tv_sec;
    out->modification_nanoseconds = st.stx_mtime.tv_nsec;
    out->has_birth_time = (st.stx_mask & STATX_BTIME) != 0;
    out->birth_seconds = out->has_birth_time ? st.stx_btime.tv_sec : 0;
    out->birth_nanoseconds = out->has_birth_time ? st.stx_btime.tv_nsec : 0;
    out->device_major = st.stx_dev_major;
    out->device_minor = st.stx_dev_minor;
    out->mode = st.stx_mode;
    out->access_seconds = st.stx_atime.tv_sec;
    out->access_nanoseconds = st.stx_atime.tv_nsec;
    out->uid = st.stx_uid;
    out->gid = st.stx_gid;
    return 0;
}

#ifndef SYS_getxattrat
#define SYS_getxattrat 464
#endif

/// getxattrat(2)'s arguments (Linux 6.13).
struct mdq_xattr_args {
    uint64_t value;
    uint32_t size;
    uint32_t flags;
};

/// Set once getxattrat(2) is found missing (ENOSYS): a racing second
/// caller only tries it once more.
static int mdq_no_getxattrat = 0;

long mdq_folder_acl(int dirfd, const char *name, void *value, size_t size) {
    static const char key[] = "system.posix_acl_access";
    if (name[0] == 0) return fgetxattr(dirfd, key, value, size);
    if (dirfd == AT_FDCWD) return lgetxattr(name, key, value, size);
    // One component looked up in the open folder, where the kernel has
    // it; else a path through /proc, resolved whole each time.
    if (!__atomic_load_n(&mdq_no_getxattrat, __ATOMIC_RELAXED)) {
        struct mdq_xattr_args args = {(uint64_t)(uintptr_t)value, (uint32_t)size, 0};
        long rc = syscall(SYS_getxattrat, dirfd, name, AT_SYMLINK_NOFOLLOW, key, &args, sizeof args);
        if (rc >= 0 || errno != ENOSYS) return rc;
        __atomic_store_n(&mdq_no_getxattrat, 1, __ATOMIC_RELAXED);
    }
    char path[64 + 256];
    if (snprintf(path, sizeof path, "/proc/self/fd/%d/%s", dirfd, name) >= (int)sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return lgetxattr(path, key, value, size);
}

long mdq_getdents64(int fd, void *buffer, size_t count) {
    return syscall(SYS_getdents64, fd, buffer, count);
}

void mdq_set_thread_name(const char *name) {
    char truncated[16];
    strncpy(truncated, name, sizeof truncated - 1);
    truncated[sizeof truncated - 1] = 0;
    pthread_setname_np(pthread_self(), truncated);
}

int mdq_peer_credentials(int fd, uint32_t *uid, int32_t *pid) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    *uid = credentials.uid;
    *pid = credentials.pid;
    return 0;
}

int mdq_peer_groups(int fd, uint32_t *primary, uint32_t *groups, int capacity) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    *primary = credentials.gid;
    socklen_t size = (socklen_t)(capacity * sizeof(gid_t));
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &size) != 0) return -1;
    return (int)(size / sizeof(gid_t));
}

long mdq_send_with_descriptors(int socket, const void *bytes, size_t length, const int *descriptors, int count) {
    if (count < 0 || count > 64) {
        errno = EINVAL;
        return -1;
    }
    struct iovec vector = {.iov_base = (void *)bytes, .iov_len = length};
    union {
        char buffer[CMSG_SPACE(64 * sizeof(int))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr message = {.msg_iov = &vector, .msg_iovlen = 1};
    if (count > 0) {
        message.msg_control = control.buffer;
        message.msg_controllen = CMSG_SPACE(count * sizeof(int));
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(count * sizeof(int));
        memcpy(CMSG_DATA(header), descriptors, count * sizeof(int));
    }
    return sendmsg(socket, &message, MSG_NOSIGNAL);
}

long mdq_receive_with_descriptors(
    int socket, void *bytes, size_t length, int *descriptors, int capacity, int *received, int *truncated) {
    *received = 0;
    *truncated = 0;
    if (capacity < 0) capacity = 0;
    if (capacity > 64) capacity = 64;
    struct iovec vector = {.iov_base = bytes, .iov_len = length};
    union {
        char buffer[CMSG_SPACE(64 * sizeof(int))];
        struct cmsghdr align;
    } control;
    struct msghdr message = {
        .msg_iov = &vector, .msg_iovlen = 1, .msg_control = control.buffer,
        .msg_controllen = CMSG_SPACE(capacity * sizeof(int))};
    ssize_t count = recvmsg(socket, &message, MSG_CMSG_CLOEXEC);
    if (count < 0) return -1;
    if (message.msg_flags & MSG_CTRUNC) *truncated = 1;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        int n = (int)((header->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        int *sent = (int *)CMSG_DATA(header);
        for (int i = 0; i < n; i++) {
            if (*received < capacity) {
                descriptors[(*received)++] = sent[i];
            } else {
                close(sent[i]);
                *truncated = 1;
            }
        }
    }
    return count;
}

long long mdq_descriptor_mount_id(int fd) {
    char name[64];
    snprintf(name, sizeof name, "/proc/self/fdinfo/%d", fd);
    FILE *info = fopen(name, "re");
    if (!info) return -1;
    char line[256];
    long long id = -1;
    while (fgets(line, sizeof line, info)) {
        if (sscanf(line, "mnt_id: %lld", &id) == 1) break;
    }
    int saved = errno;
    fclose(info);
    errno = saved;
    if (id < 0) errno = ENOENT;
    return id;
}

int mdq_open_folder_path(const char *path) {
    return open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

long mdq_descriptor_path(int fd, char *path, size_t capacity) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t length = readlink(link, path, capacity);
    if (length < 0) return -1;
    if ((size_t)length == capacity) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return length;
}

void mdq_release_free_memory(void) {
    malloc_trim(0);
}

void mdq_tune_malloc_for_daemon(int arenas) {
    mallopt(M_ARENA_MAX, arenas);
    /* A fixed threshold: buffers of 1 MiB and more (a snapshot being
       written, a crawl's batches) are mapped and unmapped on their own.
       glibc otherwise raises the threshold to the largest buffer freed,
       and later ones of that size stay in the heap once freed. */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
}

long mdq_fgetxattr(int fd, const char *name, void *value, size_t size) {
    return fgetxattr(fd, name, value, size);
}

long mdq_flistxattr(int fd, char *list, size_t size) {
    return flistxattr(fd, list, size);
}

int mdq_lower_thread_priority(int nice) {
    pid_t thread = (pid_t)syscall(SYS_gettid);
    if (setpriority(PRIO_PROCESS, (id_t)thread, nice) != 0) return -1;
    /* IOPRIO_WHO_PROCESS = 1 (a thread id is a process id here),
     * IOPRIO_CLASS_BE = 2 << 13, level 7: the lowest of the class. */
    if (syscall(SYS_ioprio_set, 1, thread, (2 << 13) | 7) != 0) return -1;
    return 0;
}

int mdq_confine_worker(unsigned long long memory_bytes, unsigned long cpu_seconds) {
    struct rlimit memory = {memory_bytes, memory_bytes};
    if (setrlimit(RLIMIT_AS, &memory) != 0) return -1;
    struct rlimit cpu = {cpu_seconds, cpu_seconds + 1};
    if (setrlimit(RLIMIT_CPU, &cpu) != 0) return -1;
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_FSIZE, &none) != 0) return -1;
    if (setrlimit(RLIMIT_CORE, &none) != 0) return -1;
    errno = 0;
    if (nice(19) == -1 && errno != 0) return -1;
    /* IOPRIO_WHO_PROCESS = 1, IOPRIO_CLASS_IDLE = 3 << 13 */
    if (syscall(SYS_ioprio_set, 1, 0, 3 << 13) != 0) return -1;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return 0;
}

/* Blocks until the peer of socket `fd` hangs up (closes or dies), without
 * reading from it; then ends the process. The worker's watch on its
 * parent: PR_SET_PDEATHSIG follows the parent *thread*, and the thread
 * that started a worker may end long before the process that uses it. */
void mdq_exit_when_peer_hangs_up(int fd) {
    struct pollfd watch = {.fd = fd, .events = POLLRDHUP};
    for (;;) {
        int rc = poll(&watch, 1, -1);
        if (rc > 0 && (watch.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))) _exit(0);
        if (rc < 0 && errno != EINTR) _exit(0);
    }
}

int mdq_pipe_cloexec(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

int mdq_spawn_close_from(void *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np((posix_spawn_file_actions_t *)actions, from);
}

int mdq_anonymous_file(const char *name) {
    return memfd_create(name, MFD_CLOEXEC);
}

int mdq_keep_only_capabilities(uint64_t keep) {
    for (int capability = 0; capability < 64; capability++) {
        if (keep & (1ULL << capability)) continue;
        // EINVAL past the kernel's last capability: nothing to drop.
        if (prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0 && errno != EINVAL) return -1;
    }
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    data[0].effective = data[0].permitted = (uint32_t)keep;
    data[1].effective = data[1].permitted = (uint32_t)(keep >> 32);
    return (int)syscall(SYS_capset, &header, data);
}

int mdq_fanotify_init(int unlimited_queue) {
    unsigned flags = FAN_CLASS_NOTIF | FAN_REPORT_DFID_NAME | FAN_CLOEXEC | FAN_NONBLOCK;
    if (unlimited_queue) flags |= FAN_UNLIMITED_QUEUE;
    return fanotify_init(flags, O_RDONLY | O_CLOEXEC);
}

int mdq_fanotify_mark_filesystem(int fanotify, const char *path, int remove) {
    uint64_t mask = FAN_CREATE | FAN_DELETE | FAN_RENAME | FAN_MODIFY | FAN_ATTRIB | FAN_CLOSE_WRITE
        | FAN_DELETE_SELF | FAN_MOVE_SELF | FAN_ONDIR;
    unsigned flags = (remove ? FAN_MARK_REMOVE : FAN_MARK_ADD) | FAN_MARK_FILESYSTEM;
    return fanotify_mark(fanotify, flags, mask, AT_FDCWD, path);
}

int mdq_file_handle(int fd, uint64_t *fsid, int32_t *type, unsigned char *bytes, unsigned capacity) {
    struct {
        struct file_handle handle;
        unsigned char space[MAX_HANDLE_SZ];
    } buffer;
    buffer.handle.handle_bytes = MAX_HANDLE_SZ;
    int mount_id;
    if (name_to_handle_at(fd, "", &buffer.handle, &mount_id, AT_EMPTY_PATH) != 0) return -1;
    if (buffer.handle.handle_bytes > capacity) {
        errno = EOVERFLOW;
        return -1;
    }
    struct statfs fs;
    if (fstatfs(fd, &fs) != 0) return -1;
    memcpy(fsid, &fs.f_fsid, sizeof *fsid);
    *type = buffer.handle.handle_type;
    memcpy(bytes, buffer.handle.f_handle, buffer.handle.handle_bytes);
    return (int)buffer.handle.handle_bytes;
}

int mdq_wake_pipe(int fds[2]) {
    return pipe2(fds, O_NONBLOCK | O_CLOEXEC);
}

int mdq_become_user(uint32_t user, uint32_t group) {
    if (setgroups(0, NULL) != 0) return -1;
    if (setresgid(group, group, group) != 0) return -1;
    if (setresuid(user, user, user) != 0) return -1;
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}
