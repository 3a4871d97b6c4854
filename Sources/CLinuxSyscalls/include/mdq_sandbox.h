#ifndef MDQ_SANDBOX_H
#define MDQ_SANDBOX_H
#include <stddef.h>
#include <stdint.h>

// What keeps the import worker apart from the user's files: the parent
// opens each file (a regular file only) and passes the descriptor, so the
// worker need open nothing.

/// Sends `length` bytes of `bytes` on the connected socket `socket`, with
/// the descriptor `fd` attached (SCM_RIGHTS) to the first byte, and
/// MSG_NOSIGNAL (a dead peer is EPIPE, not SIGPIPE). Returns the bytes
/// sent (perhaps fewer than `length`: send the rest without a descriptor),
/// or -1 with errno set.
long mdq_send_with_descriptor(int socket, const void *bytes, size_t length, int fd);

/// Receives up to `length` bytes from the connected socket `socket`, and
/// any descriptors that came with them (close-on-exec), up to `capacity`
/// of them into `fds`, their number into `*count`. Descriptors that did
/// not fit are closed by the kernel, and `*truncated` is then set.
/// Returns the bytes read (0 at the end), or -1 with errno set.
long mdq_receive_with_descriptors(int socket, void *bytes, size_t length, int *fds, int capacity, int *count,
                                  int *truncated);

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
