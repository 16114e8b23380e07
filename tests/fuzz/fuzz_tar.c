/* Fuzz target: tar archives as classify reads them (io/archive.h over libarchive: plain or
   gzip'd), each member taken decoded as the decode pool does it (io_load_image_bytes, 28 x 28
   grey). The first byte selects: bit 0 hidden members too, bit 1 a member limit of 4 KiB
   (instead of 1 MiB), bit 2 the members' bytes in a shared block of 8 KiB (as the decode
   pool's helpers read them; the larger ones alone); the rest is the archive.

   Beyond what the sanitizers see, each input checks: the archive's failure or a member's is one
   line naming the archive (and the member); a member's path is the archive's, a slash and a
   name that passes the filter; a member's size is within the limit; nothing comes after the
   end or after the archive failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "io/archive.h"
#include "io/image.h"

enum { FUZZ_MAX_MEMBERS = 64, FUZZ_MAX_SIDE = 256 };

static const char name[] = "fuzz.tar", images[] = "png,jpg,jpeg,bmp,pgm,ppm,pnm";

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int hidden = data[0] & 1;
  const size_t limit = data[0] & 2 ? 4096 : (size_t)1 << 20;
  io_archive* a = NULL;
  ttp_err e = {0};
  if (io_archive_open_memory(data + 1, size - 1, name, limit, &a, &e) != TTP_OK) {
    FUZZ_ASSERT(e.message[0] && !strchr(e.message, '\n') && strstr(e.message, name) == e.message,
                "open: %s", e.message);
    return 0;
  }
  ttp_image_options o;
  ttp_image_options_init(&o);
  o.max_width = o.max_height = FUZZ_MAX_SIDE;
  io_block* block = data[0] & 4 ? io_block_new(8192) : NULL;
  int rc = 1;
  for (int k = 0; k < FUZZ_MAX_MEMBERS && rc == 1; k++) {
    io_member m;
    e = (ttp_err){0};
    rc = io_archive_next(a, images, hidden, block, &m, &e);
    if (rc == 1) {
      FUZZ_ASSERT(strncmp(m.path, "fuzz.tar/", 9) == 0 && io_member_wanted(m.path + 9, images,
                  hidden), "member path %s", m.path);
      if (m.bytes) {
        FUZZ_ASSERT(m.size <= limit && m.bytes[m.size] == 0, "member of %zu bytes", m.size);
        FUZZ_ASSERT(!m.block || (m.block == block && m.bytes >= block->data &&
                                 m.bytes + m.size < block->data + block->cap),
                    "member outside its block");
        uint8_t px[28 * 28];
        ttp_err d = {0};
        if (io_load_image_bytes(m.bytes, m.size, m.path, &o, 28, 28, px, NULL, NULL, &d) != TTP_OK)
          FUZZ_ASSERT(d.message[0] && !strchr(d.message, '\n'), "decode: %s", d.message);
      } else {
        FUZZ_ASSERT(strstr(e.message, m.path) == e.message && !strchr(e.message, '\n'),
                    "member failure: %s", e.message);
      }
      io_member_free_bytes(&m);
      free(m.path);
    } else if (rc < 0) {
      FUZZ_ASSERT(strstr(e.message, name) == e.message && !strchr(e.message, '\n'),
                  "archive failure: %s", e.message);
    }
  }
  if (rc != 1) { /* over: nothing more */
    io_member m;
    FUZZ_ASSERT(io_archive_next(a, images, hidden, block, &m, &e) == 0 && !m.path,
                "after the end");
  }
  io_block_release(block); /* after its members: a leak or a double free shows */
  io_archive_close(a);
  return 0;
}
