// Checkpoints in the model dir, laid out like TensorFlow's so tools and people find them:
//   checkpoint                 text index: model_checkpoint_path + all_model_checkpoint_paths
//   model.ckpt-<step>.index    JSON: global step, entries (name, offset, count, CRC-32C, and the
//                              variable's shape when the writer knew it)
//   model.ckpt-<step>.data     the float32 values of every entry, back to back
//
// Every file is written to a temporary name, fsynced, renamed and the directory fsynced, data
// before index before the `checkpoint` file, so a crash at any point leaves the previous
// checkpoint intact; a failed write removes its temporary file. Restores check every field of the
// index against the data file's real size (and an index against 64 MiB) before allocating, and
// verify each entry's checksum; a corrupt latest checkpoint is skipped for the newest valid one,
// and a dir whose checkpoints all fail is an error (never a silent fresh start).
// Not thread-safe per directory: one writer (the chief) per model dir.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "taas/base/status.h"

namespace taas::checkpoint {

struct Entry {
  std::string name;  // variable name, or "<variable>/slot_<k>" for optimizer slots
  std::vector<float> values;
  // The values' shape (its product is values.size()); absent in checkpoints written before shapes
  // were recorded, which a reader then checks by element count only.
  std::optional<std::vector<std::int64_t>> shape = std::nullopt;
};

struct Checkpoint {
  std::int64_t global_step = 0;
  std::string path;  // prefix, e.g. "<dir>/model.ckpt-200"
  std::vector<Entry> entries;

  const Entry* Find(const std::string& name) const;
};

// Writes a checkpoint at `global_step`, makes it the latest, and deletes all but the newest
// `keep` checkpoints. Returns the new checkpoint's prefix. An entry whose shape does not hold its
// values is InvalidArgument, and nothing is written.
absl::StatusOr<std::string> Save(const std::string& dir, std::int64_t global_step,
                                 const std::vector<Entry>& entries, int keep);

// Prefixes listed in `<dir>/checkpoint`, oldest first; empty when there is none. A listed name
// that is not a plain file name (a path out of the dir) is left out.
std::vector<std::string> ListCheckpoints(const std::string& dir);

// Global step of the latest checkpoint, or nullopt when the dir has none.
std::optional<std::int64_t> LatestStep(const std::string& dir);

// Loads and verifies one checkpoint: DataLoss naming the file and the field for an index that is
// not what Save writes (any JSON type, a size or offset outside the data file, a shape that does
// not hold the entry's count), a size or checksum mismatch.
absl::StatusOr<Checkpoint> Load(const std::string& prefix);

// The newest checkpoint that verifies; nullopt when the dir lists none; DataLoss when it lists
// some and none verifies. Prefixes that failed are appended to `skipped` with their error.
absl::StatusOr<std::optional<Checkpoint>> LoadLatest(const std::string& dir,
                                                     std::vector<std::string>* skipped);

}  // namespace taas::checkpoint
