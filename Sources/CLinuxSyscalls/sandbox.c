#define _GNU_SOURCE
#include "mdq_sandbox.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

// MARK: Descriptor passing

long mdq_send_with_descriptor(int socket, const void *bytes, size_t length, int fd) {
    struct iovec part = {.iov_base = (void *)bytes, .iov_len = length};
    union {
        char space[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr message = {
        .msg_iov = &part, .msg_iovlen = 1, .msg_control = control.space, .msg_controllen = sizeof control.space};
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &fd, sizeof(int));
    return sendmsg(socket, &message, MSG_NOSIGNAL);
}

long mdq_receive_with_descriptors(int socket, void *bytes, size_t length, int *fds, int capacity, int *count,
                                  int *truncated) {
    struct iovec part = {.iov_base = bytes, .iov_len = length};
    union {
        char space[CMSG_SPACE(sizeof(int) * 4)];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr message = {
        .msg_iov = &part, .msg_iovlen = 1, .msg_control = control.space, .msg_controllen = sizeof control.space};
    *count = 0;
    *truncated = 0;
    long received = recvmsg(socket, &message, MSG_CMSG_CLOEXEC);
    if (received < 0) return -1;
    if (message.msg_flags & MSG_CTRUNC) *truncated = 1;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        size_t n = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof fd);
            if (*count < capacity) {
                fds[(*count)++] = fd;
            } else {
                close(fd);
                *truncated = 1;
            }
        }
    }
    return received;
}

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
