/* The public reading functions of ttapipe.h: thin wrappers that turn io's internal error record
   into the caller's message buffer. */
#include <stdlib.h>

#include "idx.h"

ttp_status ttp_read_idx_images(const char* path, ttp_images* out, char* error, size_t error_size) {
  ttp_err e = {0};
  if (!path || !out) {
    ERR(&e, TTP_ERR_INVALID_ARGUMENT, "ttp_read_idx_images: path and out are required");
  } else {
    uint32_t dims[IDX_MAX_DIMS];
    uint8_t* data;
    int ndims;
    *out = (ttp_images){0};
    if (idx_read(path, 3, 4, "images", TTP_IDX_MAX_BYTES, dims, &ndims, &data, &e) == TTP_OK) {
      /* [n, rows, cols] or [n, channels, rows, cols]. idx_read bounds the total; a side must
         also fit the int of ttp_images. */
      const uint32_t channels = ndims == 4 ? dims[1] : 1, rows = dims[ndims - 2],
                     cols = dims[ndims - 1];
      if (channels != 1 && channels != 3) {
        free(data);
        ERR(&e, TTP_ERR_FORMAT, "%s: images of %u channels: 1 or 3 (planar)", path, channels);
      } else if (rows > 65535 || cols > 65535) {
        free(data);
        ERR(&e, TTP_ERR_FORMAT, "%s: images of %ux%u are larger than 65535 on a side", path,
            rows, cols);
      } else {
        *out = (ttp_images){data, dims[0], (int)rows, (int)cols, (int)channels};
      }
    }
  }
  err_copy_out(&e, error, error_size);
  return e.status;
}

ttp_status ttp_read_idx_labels(const char* path, uint8_t** labels, size_t* count, char* error,
                               size_t error_size) {
  ttp_err e = {0};
  if (!path || !labels || !count) {
    ERR(&e, TTP_ERR_INVALID_ARGUMENT, "ttp_read_idx_labels: path, labels and count are required");
  } else {
    uint32_t dims[IDX_MAX_DIMS];
    *labels = NULL;
    *count = 0;
    int ndims;
    if (idx_read(path, 1, 1, "labels", TTP_IDX_MAX_BYTES, dims, &ndims, labels, &e) == TTP_OK)
      *count = dims[0];
  }
  err_copy_out(&e, error, error_size);
  return e.status;
}

void ttp_free(void* memory) { free(memory); }
