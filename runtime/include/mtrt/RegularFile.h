//===- RegularFile.h - Refusing what is not a file, unopened ----*- C++ -*-===//
//
// A path a reader is given may name a directory, a FIFO or a device. Opening
// a FIFO to read waits for a writer forever, so the kind is checked first.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_REGULARFILE_H
#define MTRT_REGULARFILE_H

#include "mtrt/Status.h"

#include <string>
#include <sys/stat.h>

namespace mtrt {

/// An error when `path` exists and is not a regular file: "PATH: is a
/// directory, not NOT_A", or "PATH: is not a regular file (a FIFO or a
/// device?); WHY_A_FILE". A path that does not exist passes: opening it
/// says so.
inline Status refuseIrregularFile(const std::string &path,
                                  const std::string &notA,
                                  const std::string &whyAFile) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    return Status::ok();
  if (S_ISDIR(info.st_mode))
    return Status::error(path + ": is a directory, not " + notA);
  if (!S_ISREG(info.st_mode))
    return Status::error(path +
                         ": is not a regular file (a FIFO or a "
                         "device?); " +
                         whyAFile);
  return Status::ok();
}

} // namespace mtrt

#endif // MTRT_REGULARFILE_H
