/* The SASS of a user's kernel: its stored CUBIN disassembled by the CUDA toolkit's own
 * tool, nvdisasm (else cuobjdump), run as a child (child_run.h) with a time limit and an
 * output bound. gpulab reads no instruction encoding itself. */
#ifndef GPULAB_USASS_H
#define GPULAB_USASS_H

#include <stdbool.h>
#include <stddef.h>

#include "kernels/user/nvrtc_loader.h"

#define USASS_TIME_S 10            /* the tool's time limit; killed after it */
#define USASS_MAX_BYTES (8u << 20) /* its output's bound: the listing is cut there */
#define USASS_SLOTS 2              /* disassemblies at once; more are -EBUSY */
#define USASS_TRUNCATED_NOTE \
  "\n// gpulab: the listing stops here: the disassembler wrote more than 8 MiB\n"

/* The disassembler: in each of the toolkit's bin/ folders in turn, nvdisasm then
 * cuobjdump (lib's toolkit first: the folder holding lib's include folder, or two above
 * it when that is a targets/<triple> folder; lib NULL: none; then $CUDA_HOME and
 * /usr/local/cuda), so that the tool knows the architectures of the NVRTC that compiled
 * the CUBIN; then nvdisasm, then cuobjdump, anywhere on $PATH. Its path into tool.
 * Returns 0, or -ENOENT with why saying what to install (where it looked goes to the
 * log: the server's folders are not the client's business). */
int usass_find(const struct nvrtc_lib *lib, char *tool, size_t tool_len, char *why, size_t why_len);

/* The SASS of the CUBIN image (bytes long, borrowed) into *out (malloc'd, NUL-terminated;
 * free it): `nvdisasm --print-code <file>` or `cuobjdump --dump-sass <file>` on a private
 * temporary file, removed after. A listing past USASS_MAX_BYTES is cut there and ends
 * with USASS_TRUNCATED_NOTE (*truncated set). Returns 0, or a negative errno with why
 * filled: -EBUSY USASS_SLOTS are running, -ENOENT no tool (usass_find's why), -ETIMEDOUT
 * past USASS_TIME_S, -EIO the tool failed (why: its exit and the first line of its error
 * output, the temporary file's path there as "<cubin>") or a temporary file could not
 * be written, -ENOMEM. */
int usass_disassemble(const struct nvrtc_lib *lib, const void *image, size_t bytes, char **out,
                      bool *truncated, char *why, size_t why_len);

#endif
