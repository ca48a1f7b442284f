/* Reading a CUBIN's variables and heap calls (uimage.h). */
#include "kernels/user/uimage.h"

#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The bit of st_other that ptxas sets on a __managed__ variable's symbol. */
#define STO_CUDA_MANAGED 0x4

struct elf {
  const uint8_t *p;
  size_t n;
  const Elf64_Shdr *sh;
  int n_sh;
  const char *shstr; /* section names */
  size_t shstr_n;
};

static bool in_image(const struct elf *e, uint64_t off, uint64_t len) {
  return off <= e->n && len <= e->n - off;
}

/* The NUL-terminated string at off of a table of n bytes, or NULL. */
static const char *str_at(const char *table, size_t n, uint64_t off) {
  if (off >= n || !memchr(table + off, '\0', n - off)) return NULL;
  return table + off;
}

static const char *section_name(const struct elf *e, int i) {
  return i > 0 && i < e->n_sh ? str_at(e->shstr, e->shstr_n, e->sh[i].sh_name) : NULL;
}

static int open_elf(const void *image, size_t bytes, struct elf *e, char *msg, size_t msg_len) {
  memset(e, 0, sizeof *e);
  e->p = image, e->n = bytes;
  const Elf64_Ehdr *h = image;
  if ((uintptr_t)image % 8 || bytes < sizeof *h || memcmp(h->e_ident, ELFMAG, SELFMAG) ||
      h->e_ident[EI_CLASS] != ELFCLASS64 || h->e_ident[EI_DATA] != ELFDATA2LSB) {
    snprintf(msg, msg_len, "the image is not a 64-bit little-endian ELF file");
    return -EINVAL;
  }
  if (h->e_shentsize != sizeof(Elf64_Shdr) || h->e_shnum == 0 ||
      !in_image(e, h->e_shoff, (uint64_t)h->e_shnum * sizeof(Elf64_Shdr)) || h->e_shoff % 8 ||
      h->e_shstrndx >= h->e_shnum) {
    snprintf(msg, msg_len, "the image's section table is malformed");
    return -EINVAL;
  }
  e->sh = (const Elf64_Shdr *)(e->p + h->e_shoff);
  e->n_sh = h->e_shnum;
  for (int i = 0; i < e->n_sh; i++)
    if (e->sh[i].sh_type != SHT_NOBITS && !in_image(e, e->sh[i].sh_offset, e->sh[i].sh_size)) {
      snprintf(msg, msg_len, "section %d of the image runs past its end", i);
      return -EINVAL;
    }
  const Elf64_Shdr *ss = &e->sh[h->e_shstrndx];
  if (ss->sh_type == SHT_NOBITS) { /* no bytes in the file: its offset was not checked */
    snprintf(msg, msg_len, "the image's section names are missing");
    return -EINVAL;
  }
  e->shstr = (const char *)(e->p + ss->sh_offset);
  e->shstr_n = ss->sh_size;
  return 0;
}

/* Where a variable in section name lives, or -1 when the section holds none that
 * outlives a launch (shared memory, local memory, kernel parameters). */
static int space_of(const char *name) {
  if (!name) return -1;
  if (!strcmp(name, ".nv.global") || !strcmp(name, ".nv.global.init")) return UIMAGE_GLOBAL;
  /* Bank 0 holds each kernel's parameters, set at every launch; the program's own
   * __constant__ data is bank 3 today, any other bank is taken as the program's too. */
  if (!strncmp(name, ".nv.constant", 12) && name[12] != '0') return UIMAGE_CONSTANT;
  return -1;
}

/* The device heap: malloc and free (new and delete call them), and the aligned
 * allocator behind cuda::memory_resource's device allocations. */
static bool is_heap_call(const char *name) {
  static const char *const heap[] = {"malloc", "free", "__nv_aligned_device_malloc", "realloc",
                                     "calloc"};
  for (size_t i = 0; i < sizeof heap / sizeof heap[0]; i++)
    if (!strcmp(name, heap[i])) return true;
  return false;
}

static int add_var(struct uimage *im, int *cap, const char *name, enum uimage_space space,
                   uint64_t bytes, const uint8_t *init, int section, uint64_t offset) {
  if (im->n_vars == *cap) {
    int n = *cap ? 2 * *cap : 8;
    struct uimage_var *v = realloc(im->vars, (size_t)n * sizeof *v);
    if (!v) return -ENOMEM;
    im->vars = v, *cap = n;
  }
  struct uimage_var *v = &im->vars[im->n_vars];
  if (!(v->name = strdup(name))) return -ENOMEM;
  v->space = space, v->bytes = bytes, v->init = init, v->section = section, v->offset = offset;
  im->n_vars++;
  im->var_bytes += bytes;
  return 0;
}

/* One symbol: a variable to keep, a reason to refuse, or neither. */
static int read_symbol(const struct elf *e, const Elf64_Sym *s, const char *name, struct uimage *im,
                       int *cap, char *msg, size_t msg_len) {
  int type = ELF64_ST_TYPE(s->st_info);
  if (s->st_shndx == SHN_UNDEF) {
    if ((type == STT_FUNC || type == STT_NOTYPE) && is_heap_call(name) && !im->stateful[0]) {
      snprintf(
          im->stateful, sizeof im->stateful,
          "it calls %s: the device heap (malloc, free, new, delete) outlives a launch; ask for "
          "scratch_bytes instead, a buffer zeroed before every launch",
          name);
      snprintf(im->stateful_word, sizeof im->stateful_word, "%s", name);
    }
    return 0;
  }
  if (type != STT_OBJECT || s->st_shndx >= SHN_LORESERVE || s->st_shndx >= e->n_sh) return 0;
  int space = space_of(section_name(e, s->st_shndx));
  if (space < 0) return 0;
  if (s->st_other & STO_CUDA_MANAGED) {
    if (!im->stateful[0]) {
      snprintf(im->stateful, sizeof im->stateful,
               "__managed__ variable '%.64s': managed memory outlives a launch and cannot be put "
               "back before each; use a __device__ variable or scratch_bytes",
               name);
      snprintf(im->stateful_word, sizeof im->stateful_word, "__managed__");
    }
    return 0;
  }
  if (s->st_size == 0) return 0;
  const Elf64_Shdr *sec = &e->sh[s->st_shndx];
  if (s->st_value > sec->sh_size || s->st_size > sec->sh_size - s->st_value) {
    snprintf(msg, msg_len, "variable %.80s lies outside its section", name);
    return -EINVAL;
  }
  const uint8_t *init = sec->sh_type == SHT_NOBITS ? NULL : e->p + sec->sh_offset + s->st_value;
  return add_var(im, cap, name, (enum uimage_space)space, s->st_size, init, s->st_shndx,
                 s->st_value);
}

int uimage_inspect(const void *image, size_t bytes, struct uimage *out, char *msg, size_t msg_len) {
  memset(out, 0, sizeof *out);
  struct elf e;
  int rc = open_elf(image, bytes, &e, msg, msg_len);
  if (rc) return rc;
  int cap = 0;
  for (int i = 0; i < e.n_sh; i++) {
    const Elf64_Shdr *st = &e.sh[i];
    if (st->sh_type != SHT_SYMTAB) continue;
    if (st->sh_entsize != sizeof(Elf64_Sym) || st->sh_offset % 8 ||
        st->sh_link >= (Elf64_Word)e.n_sh || e.sh[st->sh_link].sh_type != SHT_STRTAB) {
      snprintf(msg, msg_len, "the image's symbol table is malformed");
      rc = -EINVAL;
      goto fail;
    }
    const Elf64_Shdr *strs = &e.sh[st->sh_link];
    const char *str = (const char *)(e.p + strs->sh_offset);
    const Elf64_Sym *sym = (const Elf64_Sym *)(e.p + st->sh_offset);
    size_t n = st->sh_size / sizeof *sym;
    for (size_t k = 1; k < n; k++) {
      const char *name = str_at(str, strs->sh_size, sym[k].st_name);
      if (!name) {
        snprintf(msg, msg_len, "symbol %zu's name lies outside the string table", k);
        rc = -EINVAL;
        goto fail;
      }
      if ((rc = read_symbol(&e, &sym[k], name, out, &cap, msg, msg_len))) goto fail;
    }
  }
  return 0;
fail:
  if (rc == -ENOMEM) snprintf(msg, msg_len, "out of memory");
  uimage_release(out);
  return rc;
}

void uimage_release(struct uimage *im) {
  for (int i = 0; i < im->n_vars; i++) free(im->vars[i].name);
  free(im->vars);
  memset(im, 0, sizeof *im);
}
