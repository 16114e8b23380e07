/* IDX files (the MNIST format): a 4-byte magic (0, 0, element type, number of dimensions), the
   dimensions as big-endian 32-bit counts, then the elements. Plain or gzip-compressed; only
   unsigned bytes (type 0x08) are read, which is what MNIST and Fashion-MNIST images and labels
   are. */
#ifndef TTP_IO_IDX_H
#define TTP_IO_IDX_H

#include <stddef.h>
#include <stdint.h>

#include "../pipeline/error.h"

enum { IDX_MAX_DIMS = 4 };

/* Reads an IDX file of unsigned bytes with min_dims to max_dims dimensions (1 for labels, 3 for
   grey images [n, rows, cols], 4 for images of channels [n, c, rows, cols]). *ndims receives
   their number, dims[0..*ndims-1] the dimensions; *data (malloc'd, dims[0] x .. bytes) the
   elements. what ("images", "labels") names the file's role in messages.
   Refuses: a wrong magic, a zero dimension, more than max_bytes of elements, fewer elements than
   declared (truncation) and data after them, and corrupt gzip streams. Allocates as the data
   arrives, never what a header merely claims. */
ttp_status idx_read(const char* path, int min_dims, int max_dims, const char* what,
                    size_t max_bytes, uint32_t dims[IDX_MAX_DIMS], int* ndims, uint8_t** data,
                    ttp_err* e);

#endif
