// IDX image files (MNIST's format) as batches to predict on: what `taas predict` reads for a model
// trained on them (DistModel::predict_inputs), whichever engine the model is written with.
//
//   data::PipelineOptions options;
//   options.batch_size = request.batch_size;
//   options.example_shape = {28, 28, 1};
//   options.device = request.device;
//   return data::OpenIdxImageFiles(request.inputs, options);
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "taas/base/status.h"
#include "taas/data/batch.h"
#include "taas/data/pipeline.h"

namespace taas::data {

// MNIST's name of an images file's labels: "t10k-images-idx3-ubyte.gz" ->
// "t10k-labels-idx1-ubyte.gz"; empty for a name without "-images-idx3-ubyte".
std::string IdxLabelsFileOf(const std::string& images);

// The images of the files `patterns` match (MatchFiles), file after file, in batches of
// options.batch_size on options.device, never shuffled or repeated. Each file's labels come from
// its labels file (IdxLabelsFileOf) when there is one, and the batches carry labels only when
// every file has one. Errors name the file: ReadIdxImages's and ReadIdxLabels's; InvalidArgument
// for images whose pixels are not options.example_shape's elements, or inputs of which only some
// have labels; DataLoss for a labels file of another count.
absl::StatusOr<std::unique_ptr<BatchStream>> OpenIdxImageFiles(
    const std::vector<std::string>& patterns, PipelineOptions options);

}  // namespace taas::data
