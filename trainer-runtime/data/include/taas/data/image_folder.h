// Folders of JPEG and PNG files as a data set, as Keras' image_dataset_from_directory and
// torchvision's ImageFolder read them: one folder per class under a root, the class index the
// folder's place among the sorted folder names,
//
//   /data/train/ankle_boot/0001.jpg, /data/train/bag/0002.png, ...  -> classes 0, 1, ...
//
// or a list file of "path label" lines (paths relative to the list's folder), as Caffe's image
// data layer reads one. Each file is a part of one record (its bytes), so the stream pipeline
// shards by file (replica k of N reads files k, k + N, ... of the sorted list: every class in
// every shard) and, shuffling, visits the shard's files in a new seeded order every epoch, a
// whole permutation before its shuffle buffer mixes further; the decoder (MakeImageFolderDecoder)
// decodes on the pipeline's threads and takes the label from the data set by part.
//
//   data::ImageFolderOptions folders;
//   TAAS_ASSIGN_OR_RETURN(auto files,
//                         data::ImageFolderDataset::FromFolders("/data/train", folders));
//   data::ImageSpec spec;  // image.h: 28 x 28 gray, a random crop of 32 x 32
//   spec.height = spec.width = 28;
//   spec.channels = 1;
//   spec.resize_height = spec.resize_width = 32;
//   spec.random_crop = spec.random_flip = true;  // training; the evaluator's: false
//   TAAS_ASSIGN_OR_RETURN(data::ContextDecodeFn decode,
//                         data::MakeImageFolderDecoder(files, spec));
//   options.example_shape = data::ImageShape(spec);  // {28, 28, 1}
//   TAAS_ASSIGN_OR_RETURN(auto stream, data::StreamPipeline::Create(files, decode, options));
//
// The random crop and flip draw from the record's seed (records.h: the pipeline's seed, the
// replica, the epoch and the file), so a run repeats and every epoch crops anew.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "taas/base/status.h"
#include "taas/data/image.h"
#include "taas/data/records.h"

namespace taas::data {

struct ImageFolderOptions {
  // The classes in index order; the class folders must be exactly these (so a test set missing a
  // class keeps the training set's indices). Empty: every folder under the root, sorted by name.
  // Folders only.
  std::vector<std::string> class_names;
  // > 0: a list file's label must be in [0, num_classes). List files only (a folder's classes are
  // its folders).
  std::int64_t num_classes = 0;
  // The largest file read, checked before it is read: a larger one is an error naming it.
  std::int64_t max_file_bytes = std::int64_t{64} << 20;
};

// The largest list file read (about 4 M lines of 64 bytes).
inline constexpr std::int64_t kMaxImageListBytes = std::int64_t{256} << 20;

class ImageFolderDataset : public RecordDataset {
 public:
  // The files under each class folder of `root`, recursively (symbolic links to folders not
  // followed, as in Keras), whose names end in .jpg, .jpeg or .png in any case; other files, and
  // files and folders whose names start with a dot (.DS_Store, macOS's ._x.jpg, .ipynb_checkpoints)
  // are left out. The files are sorted by path within a class, classes in index order. NotFound
  // for a root that is not a folder; InvalidArgument naming the folder for a root without class
  // folders, a class folder without images, class folders that are not options.class_names.
  static absl::StatusOr<std::shared_ptr<ImageFolderDataset>> FromFolders(
      const std::string& root, const ImageFolderOptions& options = {});

  // The files a list file names, in its order: one "path label" per line, split at the line's
  // last blank (a path may hold spaces), the label a class index; blank lines and lines starting
  // with '#' skipped, CRLF line ends read. Every file is checked to exist here. Errors name the
  // list file and the line: NotFound for a missing list or image file (saying what the path was
  // relative to), InvalidArgument for a line without a label, a label that is not an integer in
  // [0, 2^31) (or [0, num_classes)), a list of no files or over kMaxImageListBytes.
  static absl::StatusOr<std::shared_ptr<ImageFolderDataset>> FromListFile(
      const std::string& list_path, const ImageFolderOptions& options = {});

  std::int64_t num_parts() const override;
  // The file's path; from a list file, with the list and the line ("/d/a.jpg (train.txt line 7)").
  std::string part_name(std::int64_t part) const override;
  // A reader of one record, the file's bytes: NotFound naming the file when it cannot be opened,
  // DataLoss when it is larger than max_file_bytes or cannot be read whole.
  absl::StatusOr<std::unique_ptr<RecordReader>> Open(std::int64_t part) const override;

  const std::vector<std::string>& files() const { return files_; }
  std::int32_t label(std::int64_t part) const;  // part in [0, num_parts())
  // The class folders' names in index order; empty for a list file.
  const std::vector<std::string>& class_names() const { return class_names_; }
  // The folders' count; for a list file, options.num_classes, or when 0 the largest label + 1.
  std::int64_t num_classes() const { return num_classes_; }

 private:
  ImageFolderDataset() = default;

  std::vector<std::string> files_;
  std::vector<std::int32_t> labels_;
  std::vector<std::string> class_names_;
  std::int64_t num_classes_ = 0;
  std::string list_name_;            // the list file's name, for part_name; empty for folders
  std::vector<std::int64_t> lines_;  // the list's line of each file
  std::int64_t max_file_bytes_ = 0;
};

// The decode step for an image folder's records: the file decoded by `spec` (image.h: by
// content, resized, cropped, flipped from the record's seed where the spec says, floats in
// [0, 1]) and the file's class from the data set. CheckImageSpec's errors; InvalidArgument for no
// data set. The decoded example's shape is ImageShape(spec); errors are DecodePixels's.
absl::StatusOr<ContextDecodeFn> MakeImageFolderDecoder(
    std::shared_ptr<const ImageFolderDataset> dataset, ImageSpec spec);

}  // namespace taas::data
