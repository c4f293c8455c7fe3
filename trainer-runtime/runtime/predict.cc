// Predicting: the writer of the predictions file, the driver RunMain runs when TAAS_PREDICT_OUTPUT
// is set, and taas::Predict, the same in this process.
#include "taas/runtime/predict.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "chief.h"
#include "exit_code.h"
#include "internal.h"
#include "taas/checkpoint/checkpoint.h"
#include "taas/data/batch.h"
#include "taas/data/numpy.h"

namespace taas {
namespace {

namespace fs = std::filesystem;

// A .npy header is written first with room for this many rows and rewritten with the real count
// by Finish: the rows are not known until the input ends, and the file is never held in memory.
constexpr std::int64_t kMaxNpyRows = 1'000'000'000'000'000;
// The offset of a version 1.0 header's length field (after the magic and the version).
constexpr long kNpyLengthOffset = 8;

std::string ErrnoText() { return std::strerror(errno); }

// One file written under `<path>.partial`, renamed to `path` by Commit; removed unless committed.
class PartialFile {
 public:
  static absl::StatusOr<std::unique_ptr<PartialFile>> Open(const std::string& path) {
    const std::string partial = path + ".partial";
    std::FILE* file = std::fopen(partial.c_str(), "wb");
    if (file == nullptr) {
      const std::string why = "predict output: cannot create " + partial + ": " + ErrnoText() +
                              " (the folder must exist and be writable)";
      return errno == ENOENT ? absl::NotFoundError(why) : absl::PermissionDeniedError(why);
    }
    return std::unique_ptr<PartialFile>(new PartialFile(path, partial, file));
  }
  ~PartialFile() {
    if (file_ != nullptr) std::fclose(file_);
    if (!committed_) std::remove(partial_.c_str());
  }

  absl::Status Write(std::string_view bytes) {
    if (bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), file_) == bytes.size()) {
      return absl::OkStatus();
    }
    return absl::InternalError("predict output: cannot write " + partial_ + ": " + ErrnoText());
  }
  // Overwrites bytes at `offset` (the .npy header).
  absl::Status WriteAt(long offset, std::string_view bytes) {
    if (std::fseek(file_, offset, SEEK_SET) != 0) {
      return absl::InternalError("predict output: cannot seek in " + partial_ + ": " + ErrnoText());
    }
    TAAS_RETURN_IF_ERROR(Write(bytes));
    if (std::fseek(file_, 0, SEEK_END) != 0) {
      return absl::InternalError("predict output: cannot seek in " + partial_ + ": " + ErrnoText());
    }
    return absl::OkStatus();
  }
  // Flushes, syncs, closes and renames into place.
  absl::Status Commit() {
    std::FILE* file = file_;
    file_ = nullptr;
    const bool written = std::fflush(file) == 0 && ::fsync(::fileno(file)) == 0;
    const bool closed = std::fclose(file) == 0;
    if (!written || !closed) {
      return absl::InternalError("predict output: cannot write " + partial_ + ": " + ErrnoText());
    }
    if (std::rename(partial_.c_str(), path_.c_str()) != 0) {
      return absl::InternalError("predict output: cannot rename " + partial_ + " to " + path_ +
                                 ": " + ErrnoText());
    }
    committed_ = true;
    return absl::OkStatus();
  }

 private:
  PartialFile(std::string path, std::string partial, std::FILE* file)
      : path_(std::move(path)), partial_(std::move(partial)), file_(file) {}

  std::string path_;
  std::string partial_;
  std::FILE* file_;
  bool committed_ = false;
};

// The header numpy.save would write for `shape`, padded with spaces to `bytes` (at least its own
// size; a multiple of 64 keeps the data aligned as numpy's own).
std::string NpyHeaderOfSize(data::NpyDtype dtype, const std::vector<std::int64_t>& shape,
                            std::size_t bytes) {
  std::string header = data::EncodeNpy(dtype, shape, {});
  if (header.size() < bytes) {
    header.insert(header.size() - 1, bytes - header.size(), ' ');  // before the closing '\n'
    const auto length = static_cast<std::uint16_t>(header.size() - kNpyLengthOffset - 2);
    std::memcpy(header.data() + kNpyLengthOffset, &length, sizeof(length));
  }
  return header;
}

std::string FormatFloat(float value) {
  char text[32];
  const int n = std::snprintf(text, sizeof(text), "%.9g", static_cast<double>(value));
  return std::string(text, static_cast<std::size_t>(n));
}

std::int64_t ArgMax(const float* row, std::int64_t k) {
  std::int64_t best = 0;
  for (std::int64_t j = 1; j < k; ++j) {
    if (row[j] > row[best]) best = j;
  }
  return best;
}

}  // namespace

struct PredictionWriter::State {
  bool npy = false;
  std::string path;
  std::unique_ptr<PartialFile> outputs;
  std::unique_ptr<PartialFile> classes_file;  // .npy of classes only
  std::string classes_path;
  std::size_t header_bytes = 0;
  // Fixed by the first batch.
  bool started = false;
  std::int64_t k = 0;
  bool classes = false;
  bool labels = false;
  std::int64_t targets_per_row = 0;
  std::int64_t examples = 0;
  std::int64_t correct = 0;
};

PredictionWriter::PredictionWriter(std::unique_ptr<State> state) : state_(std::move(state)) {}
PredictionWriter::~PredictionWriter() = default;

absl::StatusOr<std::unique_ptr<PredictionWriter>> PredictionWriter::Create(
    const std::string& path) {
  const fs::path p(path);
  const std::string ext = p.extension().string();
  if (ext != ".csv" && ext != ".npy") {
    return absl::InvalidArgumentError("predict output " + path +
                                      ": must end in .csv or .npy (the format to write)");
  }
  auto state = std::make_unique<State>();
  state->npy = ext == ".npy";
  state->path = path;
  TAAS_ASSIGN_OR_RETURN(state->outputs, PartialFile::Open(path));
  return std::unique_ptr<PredictionWriter>(new PredictionWriter(std::move(state)));
}

absl::Status PredictionWriter::Append(std::int64_t rows, std::int64_t k,
                                      std::span<const float> outputs, bool classes,
                                      std::span<const std::int32_t> labels,
                                      std::span<const float> targets) {
  State& s = *state_;
  const std::string batch = "predict: the batch of examples " + std::to_string(s.examples) + "-" +
                            std::to_string(s.examples + rows - 1);
  if (rows < 1 || k < 1 || static_cast<std::int64_t>(outputs.size()) != rows * k) {
    return absl::InvalidArgumentError(batch + ": " + std::to_string(outputs.size()) +
                                      " outputs are not " + std::to_string(rows) + " rows of " +
                                      std::to_string(k));
  }
  if (!labels.empty() && static_cast<std::int64_t>(labels.size()) != rows) {
    return absl::InvalidArgumentError(batch + ": " + std::to_string(labels.size()) +
                                      " labels for " + std::to_string(rows) + " examples");
  }
  if (targets.size() % static_cast<std::size_t>(rows) != 0) {
    return absl::InvalidArgumentError(batch + ": " + std::to_string(targets.size()) +
                                      " targets do not divide among " + std::to_string(rows) +
                                      " examples");
  }
  const std::int64_t targets_per_row = static_cast<std::int64_t>(targets.size()) / rows;
  if (!s.started) {
    s.k = k;
    s.classes = classes;
    s.labels = !labels.empty();
    s.targets_per_row = targets_per_row;
    if (s.npy) {
      s.header_bytes = data::EncodeNpy(data::NpyDtype::kFloat32, {kMaxNpyRows, k}, {}).size();
      TAAS_RETURN_IF_ERROR(s.outputs->Write(std::string(s.header_bytes, ' ')));
      if (classes) {
        s.classes_path = (fs::path(s.path).replace_extension().string()) + ".classes.npy";
        TAAS_ASSIGN_OR_RETURN(s.classes_file, PartialFile::Open(s.classes_path));
        TAAS_RETURN_IF_ERROR(s.classes_file->Write(
            std::string(data::EncodeNpy(data::NpyDtype::kInt32, {kMaxNpyRows}, {}).size(), ' ')));
      }
    } else {
      std::string header;
      for (std::int64_t j = 0; j < k; ++j)
        header += (j ? ",output_" : "output_") + std::to_string(j);
      if (classes) header += ",class";
      if (s.labels) header += ",label";
      for (std::int64_t j = 0; j < targets_per_row; ++j) header += ",target_" + std::to_string(j);
      TAAS_RETURN_IF_ERROR(s.outputs->Write(header + "\n"));
    }
    s.started = true;
  } else if (k != s.k || classes != s.classes || labels.empty() == s.labels ||
             targets_per_row != s.targets_per_row) {
    return absl::InvalidArgumentError(
        batch + ": " + std::to_string(k) + " outputs per example" + (classes ? " (classes)" : "") +
        (labels.empty() ? "" : " with labels") +
        (targets_per_row ? " with " + std::to_string(targets_per_row) + " targets" : "") +
        ", the first batch " + std::to_string(s.k) + (s.classes ? " (classes)" : "") +
        (s.labels ? " with labels" : "") +
        (s.targets_per_row ? " with " + std::to_string(s.targets_per_row) + " targets" : ""));
  }
  if (s.examples + rows > kMaxNpyRows) {
    return absl::InvalidArgumentError(batch + ": more than " + std::to_string(kMaxNpyRows) +
                                      " examples");
  }
  std::vector<std::int32_t> predicted(static_cast<std::size_t>(classes ? rows : 0));
  for (std::int64_t r = 0; r < rows && classes; ++r) {
    predicted[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(ArgMax(&outputs[r * k], k));
    if (!labels.empty() && predicted[static_cast<std::size_t>(r)] == labels[r]) ++s.correct;
  }
  if (s.npy) {
    TAAS_RETURN_IF_ERROR(s.outputs->Write(
        {reinterpret_cast<const char*>(outputs.data()), outputs.size() * sizeof(float)}));
    if (classes) {
      TAAS_RETURN_IF_ERROR(s.classes_file->Write({reinterpret_cast<const char*>(predicted.data()),
                                                  predicted.size() * sizeof(std::int32_t)}));
    }
  } else {
    std::string text;
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t j = 0; j < k; ++j) {
        if (j > 0) text += ',';
        text += FormatFloat(outputs[r * k + j]);
      }
      if (classes) text += "," + std::to_string(predicted[static_cast<std::size_t>(r)]);
      if (s.labels) text += "," + std::to_string(labels[r]);
      for (std::int64_t j = 0; j < targets_per_row; ++j) {
        text += "," + FormatFloat(targets[r * targets_per_row + j]);
      }
      text += '\n';
    }
    TAAS_RETURN_IF_ERROR(s.outputs->Write(text));
  }
  s.examples += rows;
  return absl::OkStatus();
}

absl::Status PredictionWriter::Finish() {
  State& s = *state_;
  if (!s.started) {
    return absl::InvalidArgumentError("predict: the input holds no examples; nothing written to " +
                                      s.path);
  }
  if (s.npy) {
    TAAS_RETURN_IF_ERROR(s.outputs->WriteAt(
        0, NpyHeaderOfSize(data::NpyDtype::kFloat32, {s.examples, s.k}, s.header_bytes)));
    if (s.classes_file != nullptr) {
      const std::size_t bytes = data::EncodeNpy(data::NpyDtype::kInt32, {kMaxNpyRows}, {}).size();
      TAAS_RETURN_IF_ERROR(
          s.classes_file->WriteAt(0, NpyHeaderOfSize(data::NpyDtype::kInt32, {s.examples}, bytes)));
      TAAS_RETURN_IF_ERROR(s.classes_file->Commit());
    }
  }
  return s.outputs->Commit();
}

std::int64_t PredictionWriter::examples() const { return state_->examples; }
std::int64_t PredictionWriter::outputs_per_example() const { return state_->k; }
std::optional<std::int64_t> PredictionWriter::correct() const {
  if (!state_->classes || !state_->labels) return std::nullopt;
  return state_->correct;
}

namespace runtime {
namespace {

absl::StatusOr<checkpoint::Checkpoint> LoadForPredict(const PredictOptions& options,
                                                      const Logger& logger) {
  if (!options.checkpoint.empty()) return checkpoint::Load(options.checkpoint);
  std::vector<std::string> skipped;
  TAAS_ASSIGN_OR_RETURN(auto latest, checkpoint::LoadLatest(options.model_dir, &skipped));
  for (const std::string& s : skipped) {
    logger.Warning("skipping a checkpoint that does not verify", {{"error", s}});
  }
  if (!latest) {
    return absl::NotFoundError("no checkpoint in " + options.model_dir +
                               ": train the model there first, or name one (--checkpoint)");
  }
  return *std::move(latest);
}

// The batch's outputs copied to the host, `rows` x `k` of them.
absl::Status OutputsToHost(const PredictOutputs& predicted, std::int64_t rows, Tensor& host,
                           std::int64_t& k) {
  const Shape& shape = predicted.outputs.shape();
  if (shape.empty() || shape.size() > 2 || shape[0] != rows) {
    return absl::InvalidArgumentError("predict() returned outputs " + ShapeString(shape) +
                                      " for a batch of " + std::to_string(rows) +
                                      " examples: expected [" + std::to_string(rows) + ", k]");
  }
  k = shape.size() == 2 ? shape[1] : 1;
  if (host.shape() != shape) host = Tensor(shape);
  return CopyInto(predicted.outputs, host);
}

}  // namespace

absl::StatusOr<PredictSummary> PredictWith(Context& ctx, const TrainerInfo& info,
                                           const PredictOptions& options) {
  if (options.inputs.empty()) return absl::InvalidArgumentError("predict: no input files");
  if (options.batch_size < 1) {
    return absl::InvalidArgumentError("predict: the batch size must be >= 1, got " +
                                      std::to_string(options.batch_size));
  }
  // The output first: a name that cannot be written fails before the model is built.
  TAAS_ASSIGN_OR_RETURN(std::unique_ptr<PredictionWriter> writer,
                        PredictionWriter::Create(options.output));
  TAAS_ASSIGN_OR_RETURN(const checkpoint::Checkpoint ckpt, LoadForPredict(options, ctx.logger));
  TAAS_ASSIGN_OR_RETURN(std::unique_ptr<BuiltModel> built, BuildModel(ctx, info));
  TAAS_RETURN_IF_ERROR(RestoreVariables(ckpt, built->state.variables));
  TAAS_RETURN_IF_ERROR(RestoreState(ckpt, built->state.states, ctx.logger));
  built->replica->ValuesChangedOnHost();
  built->replica->StateChangedOnHost();
  TAAS_RETURN_IF_ERROR(built->replica->Synchronize());
  built->global_step = ckpt.global_step;
  ctx.global_step = ckpt.global_step;

  Session::State state;
  state.info = &info;
  state.logger = &ctx.logger;
  state.variables = &built->state.variables;
  state.states = &built->state.states;
  state.replica = built->replica.get();
  state.global_step = ckpt.global_step;
  Session session(&state);

  const auto start = std::chrono::steady_clock::now();
  const PredictRequest request{options.inputs, options.batch_size, info.device};
  std::unique_ptr<data::BatchStream> stream;
  TAAS_RETURN_IF_ERROR(CallModel("predict_inputs()", [&]() -> absl::Status {
    TAAS_ASSIGN_OR_RETURN(stream, built->model->predict_inputs(session, request));
    return stream != nullptr ? absl::OkStatus()
                             : absl::InternalError("predict_inputs() returned no stream");
  }));
  Tensor host;
  while (true) {
    TAAS_ASSIGN_OR_RETURN(std::optional<data::Batch> batch, stream->NextBatch());
    if (!batch) break;
    const std::int64_t rows = batch->images.shape().empty() ? 0 : batch->images.shape()[0];
    const std::string where = "predict: the batch of examples " +
                              std::to_string(writer->examples()) + "-" +
                              std::to_string(writer->examples() + rows - 1);
    PredictOutputs predicted;
    absl::Status s = CallModel("predict()", [&]() -> absl::Status {
      TAAS_ASSIGN_OR_RETURN(predicted, built->model->predict(session, *batch));
      return absl::OkStatus();
    });
    std::int64_t k = 0;
    if (s.ok()) s = OutputsToHost(predicted, rows, host, k);
    if (!s.ok()) return absl::Status(s.code(), where + ": " + std::string(s.message()));
    TAAS_RETURN_IF_ERROR(
        writer->Append(rows, k, host.values(), predicted.classes, batch->labels, batch->targets));
  }
  TAAS_RETURN_IF_ERROR(writer->Finish());
  PredictSummary summary;
  summary.checkpoint = ckpt.path;
  summary.global_step = ckpt.global_step;
  summary.examples = writer->examples();
  summary.outputs_per_example = writer->outputs_per_example();
  if (auto correct = writer->correct()) {
    summary.accuracy = static_cast<double>(*correct) / static_cast<double>(summary.examples);
  }
  summary.seconds = SecondsSince(start);
  return summary;
}

int RunPredict(Context& ctx) {
  const config::RuntimeConfig& cfg = *ctx.config;
  PredictOptions options;
  options.model_dir = cfg.info.model_dir;
  options.checkpoint = cfg.predict_checkpoint;
  options.inputs = cfg.predict_inputs;
  options.output = cfg.predict_output;
  options.batch_size = cfg.predict_batch_size;
  options.device = cfg.info.device;
  auto summary = PredictWith(ctx, cfg.info, options);
  if (!summary.ok()) {
    // The model's code, its inputs or its checkpoint: permanent either way.
    return Exit(ctx.logger, ctx.global_step, FailureSource::kData, "cannot predict",
                summary.status());
  }
  // Accuracy is there only when the outputs are classes and the inputs had labels.
  const double accuracy = summary->accuracy.value_or(0);
  ctx.logger.Info("predicted", {{"output", options.output},
                                {"checkpoint", summary->checkpoint},
                                {"global_step", summary->global_step},
                                {"examples", summary->examples},
                                {"outputs_per_example", summary->outputs_per_example},
                                summary->accuracy ? LogField("accuracy", accuracy)
                                                  : LogField("accuracy", "none"),
                                {"secs", summary->seconds},
                                {"examples_per_sec", summary->examples / summary->seconds}});
  return kExitOk;
}

}  // namespace runtime

absl::StatusOr<PredictSummary> Predict(ModelFactory factory, const PredictOptions& options,
                                       std::vector<std::string> model_args) {
  runtime::Context ctx;
  // The settings of a process that predicts without TF_CONFIG; no environment is read. The
  // inputs are set after parsing: a pattern may hold the setting's comma.
  std::vector<std::string> flags = {"--predict_output=" + options.output, "--predict_input=inputs"};
  if (!options.model_dir.empty()) flags.push_back("--model_dir=" + options.model_dir);
  flags.push_back("--");
  flags.insert(flags.end(), model_args.begin(), model_args.end());
  TAAS_ASSIGN_OR_RETURN(config::RuntimeConfig config, config::ParseConfig(flags, {}));
  config.predict_inputs = options.inputs;
  ctx.logger = Logger(stderr, LogLevel::kWarning);
  runtime::PrepareDevices(config, {{options.device}, "chosen by the caller"}, ctx.logger);
  if (config.devices.empty()) {
    return absl::FailedPreconditionError("predict: " + DeviceName(options.device) +
                                         " cannot be used (its error is logged)");
  }
  ctx.config = &config;
  ctx.factory = std::move(factory);
  return runtime::PredictWith(ctx, config.info, options);
}

}  // namespace taas
