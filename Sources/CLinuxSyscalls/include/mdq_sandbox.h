#ifndef MDQ_SANDBOX_H
#define MDQ_SANDBOX_H
#include <stddef.h>
#include <stdint.h>

// The import worker's confinement beyond rlimits (Landlock and a seccomp
// filter) and the descriptor passing that lets it import a file without
// opening anything. Mechanism only: which parts to apply, and what to say
// when the kernel lacks one, is decided in Swift (WorkerConfinement).

/// The Landlock ABI version the running kernel offers (1 to 7 and up).
/// Returns it, or -1 with errno set (ENOSYS: no Landlock in this kernel;
/// EOPNOTSUPP: built in but turned off at boot).
int mdq_landlock_abi(void);

/// Restricts the calling thread, and the threads and processes it starts
/// later, to no filesystem access (every access right the running `abi`
/// knows is handled: no file or folder opened, made, removed, renamed,
/// linked, truncated, executed, no device ioctl) but reading files and
/// listing folders beneath the `readable_count` folders of `readable` (one
/// that does not exist is skipped); no TCP bind or connect (ABI 4 and up);
/// and no signal or abstract Unix socket reaching a process outside the
/// sandbox (ABI 6 and up). Descriptors already open stay usable. Needs
/// PR_SET_NO_NEW_PRIVS. Threads that exist already are NOT restricted:
/// call it while the process has one thread. Returns 0, or -1 with errno.
int mdq_landlock_restrict_self(int abi, const char *const *readable, int readable_count);

/// Reads the local time zone now, for the rest of the process's life (it
/// sets TZ to ":/etc/localtime" when TZ is unset, then calls tzset: glibc
/// opens the zone file again at each mktime and localtime only while TZ is
/// unset). Returns 0, or -1 with errno set.
int mdq_pin_local_time_zone(void);

/// Loads glibc's converters (gconv modules and their configuration) from
/// each of the `count` `charsets` to UTF-8, kept for the process's life, so
/// that a library converting text later needs no file. Returns how many
/// loaded (a charset this system lacks is skipped).
int mdq_keep_charset_converters(const char *const *charsets, int count);

/// The number of threads of this process (entries of /proc/self/task).
/// Returns it, or -1 with errno set.
int mdq_thread_count(void);

/// Installs the import worker's seccomp filter on every thread of the
/// process (SECCOMP_FILTER_FLAG_TSYNC): an allow-list of the system calls
/// a worker makes once confined; new processes, exec, sockets, ptrace,
/// cross-process memory access, signals to other processes and terminal
/// input injection kill the process (SECCOMP_RET_KILL_PROCESS); an `open`
/// asking to write or create fails with EACCES; any other system call
/// fails with ENOSYS, as an unknown one would (see sandbox.c for why).
/// Needs PR_SET_NO_NEW_PRIVS. Returns 0, or -1 with errno set (ENOTSUP:
/// no filter written for this architecture).
int mdq_seccomp_restrict(void);

/// Opens the file at `path` for an importer without opening anything that
/// is not a regular file: the name is first opened with O_PATH (which opens
/// no device, FIFO or socket, and with O_NOFOLLOW takes a symlink as
/// itself), checked to be a regular file, then reopened through
/// /proc/self/fd read-only, close-on-exec, O_NOCTTY, O_NONBLOCK, and with
/// O_NOATIME where the kernel allows it (the owner's files: indexing does
/// not make every file look recently read). The reopened file is the same
/// inode whatever is renamed meanwhile. Where /proc is not mounted the
/// name is opened again with O_NOFOLLOW and the result checked to be the
/// same inode (ENOENT if it is not). Returns the descriptor, or -1 with
/// errno set: ELOOP for a symlink, EISDIR for a folder, EINVAL for another
/// kind that is not a regular file, or what open said.
int mdq_open_regular_file(const char *path);
#endif
