/* Hostile-file reading shared by every reader in io/. */
#include "file.h"

#include "budget.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

ttp_status io_open_regular(const char* path, int* fd, size_t* size, ttp_err* e) {
  *fd = -1;
  int f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* O_NONBLOCK: never hang on a FIFO */
  if (f < 0) return ERR(e, TTP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  if (fstat(f, &st) != 0) {
    int err = errno;
    close(f);
    return ERR(e, TTP_ERR_IO, "%s: cannot stat: %s", path, strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    close(f);
    return ERR(e, TTP_ERR_IO, "%s: %s", path,
               S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
  }
  *fd = f;
  *size = (size_t)st.st_size;
  return TTP_OK;
}

ttp_status io_read_exact(int fd, const char* path, void* buf, size_t n, ttp_err* e) {
  uint8_t* p = buf;
  size_t done = 0;
  while (done < n) {
    ssize_t got = read(fd, p + done, n - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return ERR(e, TTP_ERR_IO, "%s: read failed: %s", path, strerror(errno));
    if (got == 0)
      return ERR(e, TTP_ERR_FORMAT, "%s: truncated: %zu bytes expected, %zu read", path, n, done);
    done += (size_t)got;
  }
  return TTP_OK;
}

ttp_status io_read_file_within(const char* path, size_t max_bytes, io_budget* budget,
                               uint8_t** data, size_t* size, size_t* reserved, ttp_err* e) {
  *data = NULL;
  *size = 0;
  *reserved = 0;
  int fd;
  size_t n;
  TRY(io_open_regular(path, &fd, &n, e));
  if (n > max_bytes) {
    close(fd);
    return ERR(e, TTP_ERR_FORMAT, "%s: %zu bytes, more than the %zu allowed", path, n, max_bytes);
  }
  *reserved = io_budget_take(budget, n + 1);
  uint8_t* buf = malloc(n + 1);
  ttp_status s = buf ? io_read_exact(fd, path, buf, n, e) : ERR_NOMEM(e, n + 1);
  close(fd);
  if (s != TTP_OK) {
    free(buf);
    io_budget_give(budget, *reserved);
    *reserved = 0;
    return s;
  }
  buf[n] = '\0';
  *data = buf;
  *size = n;
  return TTP_OK;
}

ttp_status io_read_file(const char* path, size_t max_bytes, uint8_t** data, size_t* size,
                        ttp_err* e) {
  size_t reserved;
  return io_read_file_within(path, max_bytes, NULL, data, size, &reserved, e);
}

ttp_status io_join(char* buf, size_t n, const char* dir, const char* name, ttp_err* e) {
  size_t len = strlen(dir);
  const char* sep = len > 0 && dir[len - 1] == '/' ? "" : "/";
  int w = snprintf(buf, n, "%s%s%s", dir, sep, name);
  if (w < 0 || (size_t)w >= n)
    return ERR(e, TTP_ERR_INVALID_ARGUMENT, "%s: path too long (%zu bytes at most)", dir, n - 1);
  return TTP_OK;
}
