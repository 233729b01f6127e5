#include "common/npy_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>

namespace tpuemu {

NpyFile NpyFile::open(const std::string& path) {
  const NpyFileHeader header = read_npy_header(path);  // read_npy's checks and messages
  const bool worth_mapping =
      header.data_bytes >= kMapFromBytes && !header.big_endian && header.data_offset % element_size(header.dtype) == 0;
  if (worth_mapping) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    const std::uint64_t total = header.data_offset + header.data_bytes;
    // The file as its header was checked (else it changed since: read it
    // again, with read_npy's messages).
    if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) == total) {
      void* mapping = ::mmap(nullptr, total, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
      ::close(fd);
      if (mapping != MAP_FAILED) {
        NpyFile file;
        file.array_.dtype = header.dtype;
        file.array_.shape = header.shape;
        file.mapping_ = mapping;
        file.mapping_bytes_ = total;
        file.data_ = static_cast<const std::uint8_t*>(mapping) + header.data_offset;
        file.data_bytes_ = header.data_bytes;
        return file;
      }
    } else if (fd >= 0) {
      ::close(fd);
    }
  }
  return NpyFile(read_npy(path));
}

NpyFile::NpyFile(NpyArray array) : array_(std::move(array)) {}

NpyFile::NpyFile(NpyFile&& other) noexcept
    : array_(std::move(other.array_)),
      mapping_(std::exchange(other.mapping_, nullptr)),
      mapping_bytes_(std::exchange(other.mapping_bytes_, 0)),
      data_(std::exchange(other.data_, nullptr)),
      data_bytes_(std::exchange(other.data_bytes_, 0)) {}

NpyFile& NpyFile::operator=(NpyFile&& other) noexcept {
  if (this != &other) {
    release();
    array_ = std::move(other.array_);
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapping_bytes_ = std::exchange(other.mapping_bytes_, 0);
    data_ = std::exchange(other.data_, nullptr);
    data_bytes_ = std::exchange(other.data_bytes_, 0);
  }
  return *this;
}

NpyFile::~NpyFile() {
  release();
}

void NpyFile::release() noexcept {
  if (mapping_ != nullptr) ::munmap(mapping_, mapping_bytes_);
  mapping_ = nullptr;
  mapping_bytes_ = 0;
  data_ = nullptr;
  data_bytes_ = 0;
}

NpyView NpyFile::view() const {
  if (mapping_ == nullptr) return NpyView(array_);
  return {array_.dtype, array_.shape, {data_, data_bytes_}};
}

NpyArray NpyFile::take_array() && {
  if (mapping_ != nullptr) {
    NpyArray copy = copy_array(view());
    release();
    return copy;
  }
  return std::move(array_);
}

}  // namespace tpuemu
