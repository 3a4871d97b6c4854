#define _GNU_SOURCE
#include "mdq_sandbox.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <iconv.h>
#include <stdlib.h>
#include <time.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

// MARK: Landlock

// Debian 12's <linux/landlock.h> predates ABI 4, so the struct and the
// access rights are declared here as the kernel's UAPI defines them (the
// values are ABI: they never change).
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef __NR_landlock_add_rule
#define __NR_landlock_add_rule 445
#endif
#ifndef __NR_landlock_restrict_self
#define __NR_landlock_restrict_self 446
#endif

struct mdq_landlock_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net; // ABI 4
    uint64_t scoped;             // ABI 6
};

struct mdq_landlock_path_beneath_attr {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

#define MDQ_LANDLOCK_RULE_PATH_BENEATH 1
#define MDQ_LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#define MDQ_LANDLOCK_ACCESS_FS_READ_FILE (1ULL << 2)
#define MDQ_LANDLOCK_ACCESS_FS_READ_DIR (1ULL << 3)
// ABI 1: execute, write, read, read dir, remove dir, remove file, make
// char, dir, reg, sock, fifo, block, sym (bits 0 to 12).
#define MDQ_LANDLOCK_ACCESS_FS_V1 ((1ULL << 13) - 1)
#define MDQ_LANDLOCK_ACCESS_FS_REFER (1ULL << 13)     // ABI 2
#define MDQ_LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)  // ABI 3
#define MDQ_LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15) // ABI 5
#define MDQ_LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)    // ABI 4
#define MDQ_LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1) // ABI 4
#define MDQ_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) // ABI 6
#define MDQ_LANDLOCK_SCOPE_SIGNAL (1ULL << 1)               // ABI 6

int mdq_landlock_abi(void) {
    return (int)syscall(__NR_landlock_create_ruleset, NULL, 0, MDQ_LANDLOCK_CREATE_RULESET_VERSION);
}

int mdq_landlock_restrict_self(int abi, const char *const *readable, int readable_count) {
    // Only what the running ABI knows: a newer right makes an older kernel
    // refuse the whole ruleset (EINVAL).
    struct mdq_landlock_ruleset_attr attr = {0};
    attr.handled_access_fs = MDQ_LANDLOCK_ACCESS_FS_V1;
    if (abi >= 2) attr.handled_access_fs |= MDQ_LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3) attr.handled_access_fs |= MDQ_LANDLOCK_ACCESS_FS_TRUNCATE;
    if (abi >= 5) attr.handled_access_fs |= MDQ_LANDLOCK_ACCESS_FS_IOCTL_DEV;
    if (abi >= 4) attr.handled_access_net = MDQ_LANDLOCK_ACCESS_NET_BIND_TCP | MDQ_LANDLOCK_ACCESS_NET_CONNECT_TCP;
    if (abi >= 6) attr.scoped = MDQ_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | MDQ_LANDLOCK_SCOPE_SIGNAL;
    // The whole struct, its unknown fields zero: a kernel with a shorter
    // struct accepts that (copy_struct_from_user checks the tail is zero).
    int ruleset = (int)syscall(__NR_landlock_create_ruleset, &attr, sizeof attr, 0);
    if (ruleset < 0) return -1;
    // Every handled access is denied everywhere but reading these.
    long rc = 0;
    for (int i = 0; i < readable_count && rc == 0; i++) {
        int folder = open(readable[i], O_PATH | O_CLOEXEC | O_DIRECTORY);
        if (folder < 0) {
            // A folder that is not there needs no rule.
            if (errno == ENOENT || errno == ENOTDIR) continue;
            rc = -1;
            break;
        }
        struct mdq_landlock_path_beneath_attr rule = {
            .allowed_access = MDQ_LANDLOCK_ACCESS_FS_READ_FILE | MDQ_LANDLOCK_ACCESS_FS_READ_DIR,
            .parent_fd = folder};
        rc = syscall(__NR_landlock_add_rule, ruleset, MDQ_LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
        int saved = errno;
        close(folder);
        errno = saved;
    }
    if (rc == 0) rc = syscall(__NR_landlock_restrict_self, ruleset, 0);
    int saved = errno;
    close(ruleset);
    errno = saved;
    return rc == 0 ? 0 : -1;
}

int mdq_thread_count(void) {
    DIR *tasks = opendir("/proc/self/task");
    if (!tasks) return -1;
    int count = 0;
    struct dirent *entry;
    while ((entry = readdir(tasks)) != NULL) {
        if (entry->d_name[0] != '.') count++;
    }
    closedir(tasks);
    return count;
}

// MARK: What a sandboxed process cannot load later

int mdq_pin_local_time_zone(void) {
    // With TZ unset, glibc opens /etc/localtime again at every mktime and
    // localtime (to see whether it changed); with TZ set and unchanged it
    // keeps the zone it read. ":" means "this file".
    if (getenv("TZ") == NULL && setenv("TZ", ":/etc/localtime", 0) != 0) return -1;
    tzset();
    return 0;
}

int mdq_keep_charset_converters(const char *const *charsets, int count) {
    // Kept open for the process's life: glibc unloads a gconv module
    // some time after its last converter closes.
    static iconv_t kept[32];
    static int kept_count = 0;
    int loaded = 0;
    for (int i = 0; i < count && kept_count < (int)(sizeof kept / sizeof *kept); i++) {
        iconv_t converter = iconv_open("UTF-8", charsets[i]);
        if (converter == (iconv_t)-1) continue;
        kept[kept_count++] = converter;
        loaded++;
    }
    return loaded;
}

// MARK: seccomp

/* The filter, and why it answers as it does:
 *
 * - A system call of another architecture (the i386 or x32 ABI on x86-64)
 *   kills the process: the numbers below mean other calls there, and a
 *   worker never makes one.
 * - The calls an escape needs kill the process (SECCOMP_RET_KILL_PROCESS,
 *   seen by the parent as SIGSYS): new processes (fork, vfork, clone
 *   without CLONE_THREAD), exec, sockets (socket, socketpair, connect,
 *   bind, listen, accept), ptrace, process_vm_readv/writev, a signal to
 *   any process but this one, and TIOCSTI/TIOCLINUX (which type into the
 *   terminal standard error may be). No importer makes them, so one that
 *   does has been subverted: the file fails and the worker is replaced.
 * - open/openat asking to write, create or truncate fail with EACCES, as
 *   Landlock would answer (a library that tries to write a cache carries
 *   on without it).
 * - Everything in the allow-list runs. It is what the worker was seen to
 *   make (strace -f) importing every fixture once confined, plus the
 *   thread, memory and clock calls glibc and the Swift runtime make.
 * - Any other call fails with ENOSYS, the answer for a call the kernel
 *   does not have. Killing for those instead would turn each call a new
 *   glibc or library release starts making (clone3, rseq, statx,
 *   faccessat2 each broke sandboxes that killed) into every import
 *   failing; ENOSYS is what those releases fall back on. Nothing is lost
 *   by it: the call does not run either way, and every call an escape is
 *   known to need is in the kill list above.
 * clone3 gets ENOSYS on purpose: its flags are in memory the filter cannot
 * read, and glibc then falls back to clone, whose flags it can. */

#if defined(__x86_64__)
#define MDQ_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define MDQ_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif
#ifndef SECCOMP_FILTER_FLAG_TSYNC
#define SECCOMP_FILTER_FLAG_TSYNC (1UL << 0)
#endif

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define MDQ_ARG_LOW(n) (offsetof(struct seccomp_data, args) + 8 * (n))
#define MDQ_ARG_HIGH(n) (offsetof(struct seccomp_data, args) + 8 * (n) + 4)
#else
#define MDQ_ARG_LOW(n) (offsetof(struct seccomp_data, args) + 8 * (n) + 4)
#define MDQ_ARG_HIGH(n) (offsetof(struct seccomp_data, args) + 8 * (n))
#endif

#ifdef MDQ_AUDIT_ARCH

/// Calls that run.
static const int allowed[] = {
    // Reading the file and the channel, writing answers and stderr.
    __NR_read, __NR_write, __NR_readv, __NR_writev, __NR_pread64, __NR_preadv, __NR_lseek, __NR_close,
    __NR_recvmsg, __NR_recvfrom, __NR_sendmsg, __NR_sendto, __NR_fstat, __NR_newfstatat, __NR_statx,
    __NR_fcntl, __NR_dup, __NR_dup3, __NR_fadvise64, __NR_ppoll, __NR_pselect6, __NR_fgetxattr, __NR_flistxattr,
#ifdef __NR_poll
    __NR_poll,
#endif
#ifdef __NR_dup2
    __NR_dup2,
#endif
    // Memory.
    __NR_mmap, __NR_munmap, __NR_mprotect, __NR_mremap, __NR_madvise, __NR_brk, __NR_membarrier,
    // Threads (clone is checked below), locks, signals to itself.
    __NR_futex, __NR_set_robust_list, __NR_get_robust_list, __NR_rseq, __NR_set_tid_address,
    __NR_sched_yield, __NR_sched_getaffinity, __NR_rt_sigaction, __NR_rt_sigprocmask, __NR_rt_sigreturn,
    __NR_sigaltstack, __NR_exit, __NR_exit_group,
    // What the kernel makes a sleep or poll a signal interrupted resume as.
    __NR_restart_syscall,
    // Clocks, identity, limits read back.
    __NR_clock_gettime, __NR_clock_getres, __NR_clock_nanosleep, __NR_nanosleep, __NR_gettimeofday,
    __NR_getpid, __NR_gettid, __NR_getppid, __NR_getuid, __NR_geteuid, __NR_getgid, __NR_getegid,
    __NR_getrandom, __NR_uname, __NR_sysinfo, __NR_getrusage,
#ifdef __NR_time
    __NR_time,
#endif
};

/// Calls that kill the process (see above).
static const int killed[] = {
    __NR_execve, __NR_execveat, __NR_ptrace, __NR_process_vm_readv, __NR_process_vm_writev,
    __NR_socket, __NR_socketpair, __NR_connect, __NR_bind, __NR_listen, __NR_accept, __NR_accept4,
    __NR_tkill, __NR_rt_sigqueueinfo, __NR_rt_tgsigqueueinfo, __NR_pidfd_open, __NR_pidfd_send_signal,
    __NR_pidfd_getfd, __NR_unshare, __NR_setns,
#ifdef __NR_fork
    __NR_fork,
#endif
#ifdef __NR_vfork
    __NR_vfork,
#endif
};

#define MDQ_FILTER_CAPACITY 256

struct filter {
    struct sock_filter code[MDQ_FILTER_CAPACITY];
    unsigned short length;
    int overflow;
};

static void emit(struct filter *f, struct sock_filter instruction) {
    if (f->length >= MDQ_FILTER_CAPACITY) {
        f->overflow = 1;
        return;
    }
    f->code[f->length++] = instruction;
}

#define STMT(code, k) ((struct sock_filter)BPF_STMT(code, k))
#define JUMP(code, k, jt, jf) ((struct sock_filter)BPF_JUMP(code, k, jt, jf))
#define IF_EQUAL(k, jt, jf) JUMP(BPF_JMP | BPF_JEQ | BPF_K, k, jt, jf)
#define IF_BITS(k, jt, jf) JUMP(BPF_JMP | BPF_JSET | BPF_K, k, jt, jf)
#define LOAD(offset) STMT(BPF_LD | BPF_W | BPF_ABS, offset)
#define RETURN(action) STMT(BPF_RET | BPF_K, action)
#define ALLOW RETURN(SECCOMP_RET_ALLOW)
#define KILL RETURN(SECCOMP_RET_KILL_PROCESS)
#define FAIL(error) RETURN(SECCOMP_RET_ERRNO | ((error) & SECCOMP_RET_DATA))

/* Each block below tests the call number in the accumulator and, when it
 * matches, always returns; when it does not, it jumps past the whole block
 * with the accumulator untouched, so the next block tests the number too. */

/// `nr` gets `action`.
static void answer(struct filter *f, int nr, struct sock_filter action) {
    emit(f, IF_EQUAL((unsigned)nr, 0, 1));
    emit(f, action);
}

/// `nr` runs when argument `arg` (its low 32 bits: flags) has none of
/// `forbidden` set, else gets `otherwise`.
static void allow_without_bits(struct filter *f, int nr, int arg, unsigned forbidden, struct sock_filter otherwise) {
    emit(f, IF_EQUAL((unsigned)nr, 0, 4));
    emit(f, LOAD(MDQ_ARG_LOW(arg)));
    emit(f, IF_BITS(forbidden, 1, 0));
    emit(f, ALLOW);
    emit(f, otherwise);
}

/// `nr` runs when argument `arg` (its low 32 bits: an int) is one of the
/// `count` `values`, else gets `otherwise`.
static void allow_values(struct filter *f, int nr, int arg, const unsigned *values, int count,
                         struct sock_filter otherwise) {
    emit(f, IF_EQUAL((unsigned)nr, 0, (unsigned char)(count + 3)));
    emit(f, LOAD(MDQ_ARG_LOW(arg)));
    for (int i = 0; i < count; i++) emit(f, IF_EQUAL(values[i], (unsigned char)(count - i), 0));
    emit(f, otherwise);
    emit(f, ALLOW);
}

int mdq_seccomp_restrict(void) {
    struct filter f = {.length = 0, .overflow = 0};
    emit(&f, LOAD(offsetof(struct seccomp_data, arch)));
    emit(&f, IF_EQUAL(MDQ_AUDIT_ARCH, 1, 0));
    emit(&f, KILL);
    emit(&f, LOAD(offsetof(struct seccomp_data, nr)));
#if defined(__x86_64__)
    // x32 calls share AUDIT_ARCH_X86_64; their numbers have this bit set.
    emit(&f, JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000U, 0, 1));
    emit(&f, KILL);
#endif
    for (size_t i = 0; i < sizeof killed / sizeof *killed; i++) answer(&f, killed[i], KILL);
    // A thread (CLONE_THREAD) may be started, a process may not. The
    // flags are the first argument on every architecture.
    emit(&f, IF_EQUAL(__NR_clone, 0, 4));
    emit(&f, LOAD(MDQ_ARG_LOW(0)));
    emit(&f, IF_BITS(CLONE_THREAD, 0, 1));
    emit(&f, ALLOW);
    emit(&f, KILL);
    answer(&f, __NR_clone3, FAIL(ENOSYS));
    // Signals to this process only (raise and abort use tgkill).
    unsigned self = (unsigned)getpid();
    allow_values(&f, __NR_kill, 0, &self, 1, KILL);
    allow_values(&f, __NR_tgkill, 0, &self, 1, KILL);
    // Opening for reading only (Landlock refuses every path anyway).
    unsigned writing = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND;
    allow_without_bits(&f, __NR_openat, 2, writing, FAIL(EACCES));
#ifdef __NR_open
    allow_without_bits(&f, __NR_open, 1, writing, FAIL(EACCES));
#endif
    answer(&f, __NR_openat2, FAIL(ENOSYS));
    // ioctl: isatty's TCGETS only; typing into a terminal kills.
    emit(&f, IF_EQUAL(__NR_ioctl, 0, 7));
    emit(&f, LOAD(MDQ_ARG_LOW(1)));
    emit(&f, IF_EQUAL(TCGETS, 0, 1));
    emit(&f, ALLOW);
    emit(&f, IF_EQUAL(TIOCSTI, 1, 0));
    emit(&f, IF_EQUAL(TIOCLINUX, 0, 1));
    emit(&f, KILL);
    emit(&f, FAIL(ENOTTY));
    // prctl: naming a thread and reading its name.
    static const unsigned names[] = {PR_SET_NAME, PR_GET_NAME};
    allow_values(&f, __NR_prctl, 0, names, 2, FAIL(EPERM));
    // prlimit64 reads this process's limits (pid 0, no new limit: the
    // pointer, both halves, is null); it sets none.
    emit(&f, IF_EQUAL(__NR_prlimit64, 0, 8));
    emit(&f, LOAD(MDQ_ARG_LOW(0)));
    emit(&f, IF_EQUAL(0, 0, 5));
    emit(&f, LOAD(MDQ_ARG_LOW(2)));
    emit(&f, IF_EQUAL(0, 0, 3));
    emit(&f, LOAD(MDQ_ARG_HIGH(2)));
    emit(&f, IF_EQUAL(0, 0, 1));
    emit(&f, ALLOW);
    emit(&f, FAIL(EPERM));
    for (size_t i = 0; i < sizeof allowed / sizeof *allowed; i++) answer(&f, allowed[i], ALLOW);
    emit(&f, FAIL(ENOSYS));
    if (f.overflow) {
        errno = E2BIG;
        return -1;
    }
    struct sock_fprog program = {.len = f.length, .filter = f.code};
    long rc = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program);
    if (rc > 0) {
        // TSYNC answers with a thread it could not bring under the filter.
        errno = ESRCH;
        return -1;
    }
    return rc == 0 ? 0 : -1;
}

#else

int mdq_seccomp_restrict(void) {
    errno = ENOTSUP;
    return -1;
}

#endif

// MARK: Opening a regular file

int mdq_open_regular_file(const char *path) {
    int handle = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (handle < 0) return -1;
    struct stat before;
    if (fstat(handle, &before) != 0) {
        int saved = errno;
        close(handle);
        errno = saved;
        return -1;
    }
    if (!S_ISREG(before.st_mode)) {
        close(handle);
        errno = S_ISLNK(before.st_mode) ? ELOOP : S_ISDIR(before.st_mode) ? EISDIR : EINVAL;
        return -1;
    }
    char name[32];
    snprintf(name, sizeof name, "/proc/self/fd/%d", handle);
    int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    int fd = open(name, flags | O_NOATIME);
    // O_NOATIME is for the file's owner (or CAP_FOWNER) only.
    if (fd < 0 && errno == EPERM) fd = open(name, flags);
    int reopened = fd >= 0;
    if (fd < 0 && errno == ENOENT) {
        // No /proc: the name again, then the same inode or nothing.
        fd = open(path, flags | O_NOFOLLOW | O_NOATIME);
        if (fd < 0 && errno == EPERM) fd = open(path, flags | O_NOFOLLOW);
    }
    int saved = errno;
    close(handle);
    if (fd < 0) {
        errno = saved;
        return -1;
    }
    if (!reopened) {
        struct stat after;
        if (fstat(fd, &after) != 0 || after.st_dev != before.st_dev || after.st_ino != before.st_ino) {
            close(fd);
            errno = ENOENT;
            return -1;
        }
    }
    return fd;
}
