#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "core/page_region.h"

namespace minfer {

namespace {

// Linux's madvise(2) advice for 2 MiB pages (-1 elsewhere: not asked). MADV_HUGEPAGE asks for
// transparent huge pages; MADV_COLLAPSE (Linux 6.1+) collapses the range into them now, reading it
// all in. Advice only: a kernel without THP, or one that refuses file pages (EINVAL without
// CONFIG_READ_ONLY_THP_FOR_FS), leaves 4 KiB pages, so errors are ignored.
#ifdef __linux__
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // for C libraries whose headers predate it
#endif
constexpr int kAdviseHugePages = MADV_HUGEPAGE;
constexpr int kAdviseCollapse = MADV_COLLAPSE;
#else
constexpr int kAdviseHugePages = -1;
constexpr int kAdviseCollapse = -1;
#endif

void advise(void* p, size_t n, int advice) {
  if (advice >= 0) (void)::madvise(p, n, advice);
}

// mlock, or a warning that says why not (as llama.cpp: most often RLIMIT_MEMLOCK).
bool lock_in_memory(const std::string& path, const void* p, size_t n) {
  if (::mlock(p, n) == 0) return true;
  const int err = errno;
  struct rlimit limit {};
  std::string limit_text = "unknown";
  if (::getrlimit(RLIMIT_MEMLOCK, &limit) == 0) {
    limit_text = limit.rlim_cur == RLIM_INFINITY ? "unlimited"
                                                 : fmt::format("{} KiB", limit.rlim_cur / 1024);
  }
  std::fprintf(stderr,
               "minfer: warning: [file] cannot mlock '%s' (%.1f MiB): %s; RLIMIT_MEMLOCK (ulimit "
               "-l) is %s: raise it to lock the weights in memory\n",
               path.c_str(), static_cast<double>(n) / (1024.0 * 1024.0), std::strerror(err),
               limit_text.c_str());
  return false;
}

// Reads the `size` bytes of fd into `out`. A file that ends early (truncated while read) is an
// error naming how far the read got.
Status read_all(int fd, const std::string& path, uint8_t* out, size_t size) {
  constexpr size_t kChunk = size_t{64} << 20;
  size_t done = 0;
  while (done < size) {
    const ssize_t n =
        ::pread(fd, out + done, std::min(kChunk, size - done), static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return make_error(ErrorCode::kIo, "[file] cannot read '{}' at offset {}: {}", path, done,
                        std::strerror(errno));
    }
    if (n == 0) {
      return make_error(ErrorCode::kIo,
                        "[file] '{}': read {} of its {} bytes, then the file ended (it shrank "
                        "while being read)",
                        path, done, size);
    }
    done += static_cast<size_t>(n);
  }
  return Status::ok();
}

// The file's bytes in anonymous memory in 2 MiB pages (--no-mmap), read-only once read.
Result<std::unique_ptr<PageRegion>> read_into_memory(int fd, const std::string& path, size_t size) {
  MINFER_ASSIGN_OR_RETURN(
      std::unique_ptr<PageRegion> copy,
      PageRegion::create(size, false, PageSize::kHuge, fmt::format("[file] '{}'", path)));
  MINFER_RETURN_IF_ERROR(read_all(fd, path, copy->data(), size));
  ::mprotect(copy->data(), copy->size(), PROT_READ);  // weights are never written, as in the map
  return copy;
}

}  // namespace

Result<std::unique_ptr<MappedFile>> MappedFile::open(const std::string& path,
                                                     const MapOptions& options) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return make_error(err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                      "[file] cannot open '{}': {}", path, std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return make_error(ErrorCode::kIo, "[file] cannot stat '{}': {}", path, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error(ErrorCode::kInvalidArgument, "[file] '{}' is not a regular file", path);
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return std::unique_ptr<MappedFile>(new MappedFile(path, nullptr, 0, nullptr, nullptr));
  }
  uint8_t* region = nullptr;
  std::unique_ptr<PageRegion> copy;
  if (options.use_mmap) {
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return make_error(ErrorCode::kIo, "[file] cannot mmap '{}' ({} bytes): {}", path, size,
                        std::strerror(err));
    }
    region = static_cast<uint8_t*>(map);
    // Page-cache readahead then fills the map with huge folios where the file system allows.
    advise(region, size, kAdviseHugePages);
    // Collapsing reads the whole file in: only when mlock is about to do that anyway.
    if (options.use_mlock) advise(region, size, kAdviseCollapse);
  } else {
    Result<std::unique_ptr<PageRegion>> read = read_into_memory(fd, path, size);
    if (!read.is_ok()) {
      ::close(fd);
      return read.status();
    }
    copy = std::move(*read);
    region = copy->data();
  }
  ::close(fd);  // a mapping keeps the file alive
  std::unique_ptr<MappedFile> file(
      new MappedFile(path, region, size, copy == nullptr ? region : nullptr, std::move(copy)));
  if (options.use_mlock) file->locked_ = lock_in_memory(path, region, size);
  return file;
}

MappedFile::~MappedFile() {
  if (map_ != nullptr) ::munmap(map_, size_);
}

}  // namespace minfer
