// Checkpoints in the model dir, laid out like TensorFlow's so tools and people find them:
//   checkpoint                    text index: model_checkpoint_path + all_model_checkpoint_paths
//                                 (prefixes: "model.ckpt-<step>")
//   model.ckpt-<step>.safetensors every entry as a named float32 tensor with its shape
//                                 (safetensors.h), and in __metadata__: format
//                                 "taas-checkpoint-2", global_step, and crc32c.<name> for each
//
// Any framework reads one in a line (safetensors.numpy.load_file). Checkpoints written before
// safetensors (model.ckpt-<step>.index, JSON, + .data, raw float32) are still read: a prefix
// without a .safetensors file is loaded from its .index and .data, so old model dirs resume and
// warm-start; new checkpoints are always safetensors.
//
// Every file is written to a temporary name, fsynced, renamed and the directory fsynced, the
// checkpoint before the `checkpoint` file, so a crash at any point leaves the previous
// checkpoint intact; a failed write removes its temporary file. Restores check every header field
// against the file's real size (and a header against 64 MiB) before allocating, and verify each
// entry's checksum; a corrupt latest checkpoint is skipped for the newest valid one, and a dir
// whose checkpoints all fail is an error (never a silent fresh start).
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
  // The values' shape (its product is values.size()). Save writes an entry without one as a vector
  // ([values.size()]); Load gives every safetensors entry its shape, and leaves it absent only in
  // index checkpoints written before shapes were recorded, which a reader then checks by element
  // count only.
  std::optional<std::vector<std::int64_t>> shape = std::nullopt;
};

struct Checkpoint {
  std::int64_t global_step = 0;
  std::string path;  // prefix, e.g. "<dir>/model.ckpt-200"; a file's path less .safetensors
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

// Loads and verifies one checkpoint (<prefix>.safetensors, else the older <prefix>.index and
// .data): DataLoss naming the file and the field or tensor for a header or index that is not
// what Save writes (safetensors.h's checks; any JSON type, a size or offset outside the data
// file, a shape that does not hold the entry's count), a missing or wrong format, global step or
// checksum. NotFound when neither file exists.
absl::StatusOr<Checkpoint> Load(const std::string& prefix);

// Loads any safetensors file of float32 tensors, e.g. one PyTorch's safetensors.torch.save_file
// wrote (for a warm start). Checksums and the global step are read when its metadata has them
// (a taas checkpoint); with `taas_checkpoint` they must be there. Errors as Load's; a tensor of
// another dtype is InvalidArgument naming it and the file.
absl::StatusOr<Checkpoint> LoadSafetensors(const std::string& path, bool taas_checkpoint = false);

// The newest checkpoint that verifies; nullopt when the dir lists none; DataLoss when it lists
// some and none verifies. Prefixes that failed are appended to `skipped` with their error.
absl::StatusOr<std::optional<Checkpoint>> LoadLatest(const std::string& dir,
                                                     std::vector<std::string>* skipped);

}  // namespace taas::checkpoint
