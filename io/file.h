/* Reading files that may be hostile: only regular files are opened, sizes are known before
   anything is allocated, and every failure becomes one line naming the file. */
#ifndef TTP_IO_FILE_H
#define TTP_IO_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../pipeline/error.h"

/* Opens path read-only, refusing directories, devices and FIFOs. *fd: the open descriptor (the
   caller closes it); *size: the file's size in bytes at the time of opening. */
ttp_status io_open_regular(const char* path, int* fd, size_t* size, ttp_err* e);

/* Reads exactly n bytes from fd; a short read (the file shrank) is reported as truncation. */
ttp_status io_read_exact(int fd, const char* path, void* buf, size_t n, ttp_err* e);

/* Reads a whole regular file of at most max_bytes into *data (malloc'd, followed by one NUL byte
   that *size does not count, so text can be parsed in place). */
ttp_status io_read_file(const char* path, size_t max_bytes, uint8_t** data, size_t* size,
                        ttp_err* e);

/* io_read_file, its bytes reserved from budget (budget.h; NULL: none) before they are
   allocated: *reserved, to be given back once *data is freed (0 after a failure). */
typedef struct io_budget io_budget;
ttp_status io_read_file_within(const char* path, size_t max_bytes, io_budget* budget,
                               uint8_t** data, size_t* size, size_t* reserved, ttp_err* e);

/* The float32 stored little-endian at b (the mnistCUDNN weight files, ONNX's raw data). */
static inline float io_float_le(const uint8_t* b) {
  const uint32_t bits = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                        (uint32_t)b[3] << 24;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* dir + "/" + name into buf of n bytes; refuses a result that would not fit. */
ttp_status io_join(char* buf, size_t n, const char* dir, const char* name, ttp_err* e);

#endif
