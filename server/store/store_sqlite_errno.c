/* What a SQLite result code means as the store's negative errno (store.h), for every
 * file of the SQLite store: a leaf, calling none of them. */
#include <errno.h>
#include <sqlite3.h>
#include <sys/resource.h>

#include "server/store/store_sqlite.h"

int lite_errno(sqlite3 *db, int rc) {
  switch (rc & 0xff) {
  case SQLITE_FULL: return -ENOSPC;
  case SQLITE_READONLY: return -EROFS;
  case SQLITE_NOMEM: return -ENOMEM;
  case SQLITE_IOERR: {
    int e = sqlite3_system_errno(db); /* SQLite calls ENOSPC full */
    if (e == EFBIG || e == ENOSPC || e == EDQUOT || e == EROFS) return -e;
    /* A write cut short leaves no errno: under a file size limit, that is the limit. */
    struct rlimit fsize;
    if (e == 0 && (rc == SQLITE_IOERR_WRITE || rc == SQLITE_IOERR_TRUNCATE) &&
        getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY)
      return -EFBIG;
    return -EIO;
  }
  default: return -EIO;
  }
}
