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
    *out = (ttp_images){0};
    if (idx_read(path, 3, "images", TTP_IDX_MAX_BYTES, dims, &data, &e) == TTP_OK) {
      /* idx_read bounds the total; a side must also fit the int of ttp_images. */
      if (dims[1] > 65535 || dims[2] > 65535) {
        free(data);
        ERR(&e, TTP_ERR_FORMAT, "%s: images of %ux%u are larger than 65535 on a side", path,
            dims[1], dims[2]);
      } else {
        *out = (ttp_images){data, dims[0], (int)dims[1], (int)dims[2]};
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
    if (idx_read(path, 1, "labels", TTP_IDX_MAX_BYTES, dims, labels, &e) == TTP_OK)
      *count = dims[0];
  }
  err_copy_out(&e, error, error_size);
  return e.status;
}

void ttp_free(void* memory) { free(memory); }
