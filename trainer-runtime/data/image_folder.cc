#include "taas/data/image_folder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string_view>
#include <utility>

namespace taas::data {
namespace {

namespace fs = std::filesystem;

bool Hidden(const fs::path& path) { return path.filename().string().starts_with('.'); }

bool ImageExtension(const fs::path& path) {
  std::string extension = path.extension().string();
  for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return extension == ".jpg" || extension == ".jpeg" || extension == ".png";
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? "none" : out;
}

// A file descriptor closed when it goes.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// Reads `path` whole into `out`, checking its size against `max_bytes` first. `name` is what
// errors call it.
absl::Status ReadWholeFile(const std::string& path, const std::string& name, std::int64_t max_bytes,
                           const char* limit_name, std::string& out) {
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    return absl::NotFoundError(name + ": cannot open: " + std::strerror(errno));
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) {
    return absl::DataLossError(name + ": not a regular file");
  }
  if (info.st_size > max_bytes) {
    return absl::DataLossError(
        name + ": the file is " + std::to_string(info.st_size) + " bytes, more than " + limit_name +
        " (" + std::to_string(max_bytes) + "): raise the limit if it is that large");
  }
  out.resize(static_cast<std::size_t>(info.st_size));
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(fd.get(), out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::DataLossError(name + ": cannot read: " + std::strerror(errno));
    if (n == 0) {
      return absl::DataLossError(name + ": the file shrank while read (" + std::to_string(done) +
                                 " of " + std::to_string(out.size()) + " bytes)");
    }
    done += static_cast<std::size_t>(n);
  }
  return absl::OkStatus();
}

// One file as one record.
class FileRecordReader : public RecordReader {
 public:
  FileRecordReader(std::string path, std::string name, std::int64_t max_bytes)
      : path_(std::move(path)), name_(std::move(name)), max_bytes_(max_bytes) {}

  absl::StatusOr<bool> Next(Record& record) override {
    if (done_) return false;
    done_ = true;
    TAAS_RETURN_IF_ERROR(ReadWholeFile(path_, name_, max_bytes_,
                                       "ImageFolderOptions::max_file_bytes", record.bytes));
    record.index = 0;
    record.offset = 0;
    return true;
  }

 private:
  const std::string path_;
  const std::string name_;
  const std::int64_t max_bytes_;
  bool done_ = false;
};

absl::Status CheckOptions(const ImageFolderOptions& options) {
  if (options.max_file_bytes < 1) {
    return absl::InvalidArgumentError("image folder: max_file_bytes must be >= 1, got " +
                                      std::to_string(options.max_file_bytes));
  }
  if (options.num_classes < 0) {
    return absl::InvalidArgumentError("image folder: num_classes must be >= 0, got " +
                                      std::to_string(options.num_classes));
  }
  return absl::OkStatus();
}

// The images under a class folder, sorted by path.
absl::StatusOr<std::vector<std::string>> ClassImages(const fs::path& folder) {
  std::vector<std::string> files;
  std::error_code error;
  fs::recursive_directory_iterator it(folder, error);
  for (; !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    const fs::path& path = it->path();
    if (Hidden(path)) {
      if (it->is_directory(error)) it.disable_recursion_pending();
      continue;
    }
    if (ImageExtension(path) && it->is_regular_file(error)) files.push_back(path.string());
  }
  if (error) {
    return absl::InternalError("image folder: cannot list " + folder.string() + ": " +
                               error.message());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

absl::StatusOr<std::shared_ptr<ImageFolderDataset>> ImageFolderDataset::FromFolders(
    const std::string& root, const ImageFolderOptions& options) {
  TAAS_RETURN_IF_ERROR(CheckOptions(options));
  if (options.num_classes != 0) {
    return absl::InvalidArgumentError(
        "image folder: num_classes is for list files; a folder's classes are its folders (set "
        "class_names to fix them)");
  }
  std::error_code error;
  if (!fs::is_directory(root, error)) {
    return absl::NotFoundError("image folder: " + root +
                               " is not a folder: check the path (and the job's volume mounts)");
  }
  std::vector<std::string> found;
  for (fs::directory_iterator it(root, error); !error && it != fs::directory_iterator();
       it.increment(error)) {
    if (!Hidden(it->path()) && it->is_directory(error)) {
      found.push_back(it->path().filename().string());
    }
  }
  if (error) {
    return absl::InternalError("image folder: cannot list " + root + ": " + error.message());
  }
  std::sort(found.begin(), found.end());
  if (found.empty()) {
    return absl::InvalidArgumentError("image folder: " + root +
                                      " holds no class folders: put each class's images in a "
                                      "folder of its own under it (root/<class>/<image>)");
  }
  std::vector<std::string> classes = found;
  if (!options.class_names.empty()) {
    classes = options.class_names;
    std::vector<std::string> wanted = classes;
    std::sort(wanted.begin(), wanted.end());
    if (std::adjacent_find(wanted.begin(), wanted.end()) != wanted.end() || wanted != found) {
      return absl::InvalidArgumentError("image folder: " + root + " holds the class folders " +
                                        Join(found) + ", but ImageFolderOptions::class_names is " +
                                        Join(options.class_names) +
                                        ": the folders must be exactly the classes, each once");
    }
  }
  std::shared_ptr<ImageFolderDataset> dataset(new ImageFolderDataset());
  for (std::size_t label = 0; label < classes.size(); ++label) {
    const fs::path folder = fs::path(root) / classes[label];
    TAAS_ASSIGN_OR_RETURN(std::vector<std::string> images, ClassImages(folder));
    if (images.empty()) {
      return absl::InvalidArgumentError("image folder: class folder " + folder.string() +
                                        " holds no .jpg, .jpeg or .png file: add its images or "
                                        "remove the folder");
    }
    for (std::string& image : images) {
      dataset->files_.push_back(std::move(image));
      dataset->labels_.push_back(static_cast<std::int32_t>(label));
    }
  }
  dataset->class_names_ = std::move(classes);
  dataset->num_classes_ = static_cast<std::int64_t>(dataset->class_names_.size());
  dataset->max_file_bytes_ = options.max_file_bytes;
  return dataset;
}

absl::StatusOr<std::shared_ptr<ImageFolderDataset>> ImageFolderDataset::FromListFile(
    const std::string& list_path, const ImageFolderOptions& options) {
  TAAS_RETURN_IF_ERROR(CheckOptions(options));
  if (!options.class_names.empty()) {
    return absl::InvalidArgumentError(
        "image list: class_names is for class folders; a list file's labels are numbers");
  }
  std::string text;
  TAAS_RETURN_IF_ERROR(ReadWholeFile(list_path, "image list " + list_path, kMaxImageListBytes,
                                     "kMaxImageListBytes", text));
  const fs::path base = fs::path(list_path).parent_path();
  const std::string list_name = fs::path(list_path).filename().string();
  std::shared_ptr<ImageFolderDataset> dataset(new ImageFolderDataset());
  std::int64_t line_number = 0;
  std::int32_t largest = -1;
  for (std::size_t start = 0; start < text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    start = end + 1;
    ++line_number;
    auto where = [&] { return "image list " + list_path + " line " + std::to_string(line_number); };
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') continue;
    line = line.substr(first, line.find_last_not_of(" \t") - first + 1);
    const std::size_t blank = line.find_last_of(" \t");
    if (blank == std::string_view::npos) {
      return absl::InvalidArgumentError(where() + ": \"" + std::string(line.substr(0, 200)) +
                                        "\" has no label: write \"path label\"");
    }
    const std::string_view label_text = line.substr(blank + 1);
    const std::string_view path_text = line.substr(0, line.find_last_not_of(" \t", blank) + 1);
    std::int64_t label = -1;
    const auto [end_of_label, parsed] =
        std::from_chars(label_text.data(), label_text.data() + label_text.size(), label);
    const std::int64_t limit =
        options.num_classes > 0 ? options.num_classes : std::numeric_limits<std::int32_t>::max();
    if (parsed != std::errc() || end_of_label != label_text.data() + label_text.size() ||
        label < 0 || label >= limit) {
      return absl::InvalidArgumentError(
          where() + ": the label \"" + std::string(label_text.substr(0, 40)) +
          "\" is not a class index in [0, " + std::to_string(limit) + ")" +
          (options.num_classes > 0 ? " (ImageFolderOptions::num_classes)" : ""));
    }
    const fs::path path = base / fs::path(path_text);  // an absolute path_text stays as it is
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) {
      return absl::NotFoundError(where() + ": no file " + path.string() +
                                 " (a relative path is relative to the list's folder)");
    }
    dataset->files_.push_back(path.string());
    dataset->labels_.push_back(static_cast<std::int32_t>(label));
    dataset->lines_.push_back(line_number);
    largest = std::max(largest, static_cast<std::int32_t>(label));
  }
  if (dataset->files_.empty()) {
    return absl::InvalidArgumentError("image list " + list_path +
                                      " names no files: write one \"path label\" a line");
  }
  dataset->list_name_ = list_name;
  dataset->num_classes_ = options.num_classes > 0 ? options.num_classes : largest + 1;
  dataset->max_file_bytes_ = options.max_file_bytes;
  return dataset;
}

std::int64_t ImageFolderDataset::num_parts() const {
  return static_cast<std::int64_t>(files_.size());
}

std::string ImageFolderDataset::part_name(std::int64_t part) const {
  if (part < 0 || part >= num_parts()) return "image part " + std::to_string(part);
  const auto k = static_cast<std::size_t>(part);
  if (list_name_.empty()) return files_[k];
  return files_[k] + " (" + list_name_ + " line " + std::to_string(lines_[k]) + ")";
}

absl::StatusOr<std::unique_ptr<RecordReader>> ImageFolderDataset::Open(std::int64_t part) const {
  if (part < 0 || part >= num_parts()) {
    return absl::OutOfRangeError("image folder: part " + std::to_string(part) + " is not in [0, " +
                                 std::to_string(num_parts()) + ")");
  }
  return std::make_unique<FileRecordReader>(files_[static_cast<std::size_t>(part)], part_name(part),
                                            max_file_bytes_);
}

std::int32_t ImageFolderDataset::label(std::int64_t part) const {
  return labels_[static_cast<std::size_t>(part)];
}

absl::StatusOr<ContextDecodeFn> MakeImageFolderDecoder(
    std::shared_ptr<const ImageFolderDataset> dataset, ImageSpec spec) {
  if (dataset == nullptr) return absl::InvalidArgumentError("image folder decoder: no data set");
  TAAS_RETURN_IF_ERROR(CheckImageSpec(spec));
  const auto elements = static_cast<std::size_t>(NumElements(ImageShape(spec)));
  return ContextDecodeFn(
      [dataset = std::move(dataset), spec, elements](
          std::string_view record, const RecordContext& context) -> absl::StatusOr<DecodedExample> {
        if (context.part < 0 || context.part >= dataset->num_parts()) {
          return absl::InvalidArgumentError("part " + std::to_string(context.part) +
                                            " is not one of the decoder's data set's " +
                                            std::to_string(dataset->num_parts()) + " files");
        }
        DecodedExample example;
        example.input.resize(elements);
        TAAS_RETURN_IF_ERROR(DecodeImage(record, spec, context.seed, example.input));
        example.label = dataset->label(context.part);
        return example;
      });
}

}  // namespace taas::data
