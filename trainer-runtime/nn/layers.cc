#include "taas/nn/layers.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "taas/tensor/initializers.h"

namespace taas::nn {
namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

void Require(bool condition, const std::string& layer, const std::string& message) {
  if (!condition) throw std::invalid_argument(layer + ": " + message);
}

// Makes `tensor` have `shape`, reallocating only when the shape changes.
void Ensure(Tensor& tensor, const Shape& shape) {
  if (tensor.shape() != shape) tensor = Tensor(shape);
}

// grad * (output > 0) into `out`.
void ReluMask(const Tensor& output, const Tensor& grad, Tensor& out) {
  Ensure(out, grad.shape());
  const float* y = output.data();
  const float* g = grad.data();
  float* o = out.data();
  const std::int64_t n = grad.size();
  for (std::int64_t i = 0; i < n; ++i) o[i] = y[i] > 0.0f ? g[i] : 0.0f;
}

std::int64_t OutputSize(std::int64_t in, std::int64_t kernel, std::int64_t stride, Padding padding,
                        std::int64_t* pad_l, std::int64_t* pad_r) {
  if (padding == Padding::kSame) {
    const std::int64_t out = (in + stride - 1) / stride;
    const std::int64_t total = std::max<std::int64_t>((out - 1) * stride + kernel - in, 0);
    *pad_l = total / 2;
    *pad_r = total - *pad_l;
    return out;
  }
  *pad_l = *pad_r = 0;
  return (in - kernel) / stride + 1;
}

// A reorder between two memories that is skipped when both have the same layout.
struct MaybeReorder {
  void Init(const memory& from_memory, const memory& to_memory) {
    from = from_memory;
    to = to_memory;
    if (from.get_desc() != to.get_desc()) primitive = dnnl::reorder(from, to);
  }
  bool needed() const { return static_cast<bool>(primitive); }
  void Run(dnnl::stream& stream) {
    if (primitive) primitive.execute(stream, from, to);
  }
  memory from, to;
  dnnl::reorder primitive;
};

}  // namespace

// ----------------------------------------------------------------------------------------------
// Dense

Dense::Dense(std::string name, std::int64_t in, std::int64_t out, Activation activation)
    : Layer(std::move(name)),
      in_(in),
      out_(out),
      activation_(activation),
      kernel_{this->name() + "/kernel", Tensor({in, out}), Tensor({in, out})},
      bias_{this->name() + "/bias", Tensor({out}), Tensor({out})} {
  GlorotUniform(kernel_.value, in, out, std::hash<std::string>{}(kernel_.name));
}

const Tensor& Dense::Forward(const Tensor& input, bool) {
  Require(input.shape().size() == 2 && input.shape()[1] == in_, name(),
          "expected input [N, " + std::to_string(in_) + "], got " + ShapeString(input.shape()));
  const std::int64_t n = input.shape()[0];
  input_ = &input;
  Ensure(output_, {n, out_});
  float* y = output_.data();
  const float* b = bias_.value.data();
  for (std::int64_t r = 0; r < n; ++r) std::copy_n(b, out_, y + r * out_);
  dnnl::sgemm('N', 'N', n, out_, in_, 1.0f, input.data(), in_, kernel_.value.data(), out_, 1.0f, y,
              out_);
  if (activation_ == Activation::kRelu) {
    const std::int64_t size = output_.size();
    for (std::int64_t i = 0; i < size; ++i) y[i] = std::max(y[i], 0.0f);
  }
  return output_;
}

bool Dense::SkipReluMask() {
  if (activation_ != Activation::kRelu) return false;
  skip_relu_mask_ = true;
  return true;
}

const Tensor& Dense::Backward(const Tensor& grad_output) {
  Require(input_ != nullptr && grad_output.shape() == output_.shape(), name(),
          "gradient shape " + ShapeString(grad_output.shape()) + " does not match output " +
              ShapeString(output_.shape()));
  const std::int64_t n = grad_output.shape()[0];
  const Tensor* dy = &grad_output;
  if (activation_ == Activation::kRelu && !skip_relu_mask_) {
    ReluMask(output_, grad_output, masked_grad_);
    dy = &masked_grad_;
  }
  dnnl::sgemm('T', 'N', in_, out_, n, 1.0f, input_->data(), in_, dy->data(), out_, 0.0f,
              kernel_.gradient.data(), out_);
  float* db = bias_.gradient.data();
  std::fill_n(db, out_, 0.0f);
  for (std::int64_t r = 0; r < n; ++r) {
    const float* row = dy->data() + r * out_;
    for (std::int64_t c = 0; c < out_; ++c) db[c] += row[c];
  }
  if (!input_gradient_) {
    input_grad_ = Tensor();
    return input_grad_;
  }
  Ensure(input_grad_, input_->shape());
  dnnl::sgemm('N', 'T', n, in_, out_, 1.0f, dy->data(), out_, kernel_.value.data(), out_, 0.0f,
              input_grad_.data(), in_);
  return input_grad_;
}

// ----------------------------------------------------------------------------------------------
// Conv2D

struct Conv2D::Plan {
  Shape output_shape;
  dnnl::convolution_forward::primitive_desc fwd_pd;
  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_weights::primitive_desc bwd_weights_pd;
  dnnl::convolution_backward_weights bwd_weights;
  dnnl::convolution_backward_data::primitive_desc bwd_data_pd;
  dnnl::convolution_backward_data bwd_data;
  bool has_bwd_data = false;

  memory src, dst, bias, diff_dst, diff_src, diff_bias;
  MaybeReorder weights_to_fwd, weights_to_bwd_data, diff_weights_to_user;
};

Conv2D::Conv2D(std::string name, ComputeContext& context, std::int64_t in_channels,
               std::int64_t filters, std::int64_t kernel_size, std::int64_t stride, Padding padding,
               Activation activation)
    : Layer(std::move(name)),
      context_(context),
      in_channels_(in_channels),
      filters_(filters),
      kernel_size_(kernel_size),
      stride_(stride),
      padding_(padding),
      activation_(activation),
      kernel_{this->name() + "/kernel", Tensor({kernel_size, kernel_size, in_channels, filters}),
              Tensor({kernel_size, kernel_size, in_channels, filters})},
      bias_{this->name() + "/bias", Tensor({filters}), Tensor({filters})} {
  const std::int64_t receptive = kernel_size * kernel_size;
  GlorotUniform(kernel_.value, receptive * in_channels, receptive * filters,
                std::hash<std::string>{}(kernel_.name));
}

Conv2D::~Conv2D() = default;

bool Conv2D::SkipReluMask() {
  if (activation_ != Activation::kRelu) return false;
  skip_relu_mask_ = true;
  return true;
}

Conv2D::Plan& Conv2D::PlanFor(const Shape& input_shape) {
  auto it = plans_.find(input_shape);
  if (it != plans_.end() && it->second->has_bwd_data == input_gradient_) return *it->second;

  const std::int64_t n = input_shape[0], h = input_shape[1], w = input_shape[2];
  std::int64_t pad_t, pad_b, pad_l, pad_r;
  const std::int64_t oh = OutputSize(h, kernel_size_, stride_, padding_, &pad_t, &pad_b);
  const std::int64_t ow = OutputSize(w, kernel_size_, stride_, padding_, &pad_l, &pad_r);
  Require(oh > 0 && ow > 0, name(),
          "input " + ShapeString(input_shape) + " is smaller than the kernel");

  auto plan = std::make_unique<Plan>();
  plan->output_shape = {n, oh, ow, filters_};
  auto& engine = context_.engine();
  const memory::dims src_dims = {n, in_channels_, h, w};
  const memory::dims weights_dims = {filters_, in_channels_, kernel_size_, kernel_size_};
  const memory::dims bias_dims = {filters_};
  const memory::dims dst_dims = {n, filters_, oh, ow};
  const memory::dims strides = {stride_, stride_};
  const memory::dims padding_l = {pad_t, pad_l};
  const memory::dims padding_r = {pad_b, pad_r};

  const memory::desc src_md(src_dims, dt::f32, tag::nhwc);
  const memory::desc dst_md(dst_dims, dt::f32, tag::nhwc);
  const memory::desc bias_md(bias_dims, dt::f32, tag::x);
  const memory::desc user_weights_md(weights_dims, dt::f32, tag::hwio);
  const memory::desc any_weights_md(weights_dims, dt::f32, tag::any);

  dnnl::primitive_attr attr;
  if (activation_ == Activation::kRelu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  dnnl::convolution_forward::desc fwd_desc(
      dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, src_md,
      any_weights_md, bias_md, dst_md, strides, padding_l, padding_r);
  plan->fwd_pd = dnnl::convolution_forward::primitive_desc(fwd_desc, attr, engine);
  plan->fwd = dnnl::convolution_forward(plan->fwd_pd);

  dnnl::convolution_backward_weights::desc bwd_w_desc(dnnl::algorithm::convolution_direct, src_md,
                                                      any_weights_md, bias_md, dst_md, strides,
                                                      padding_l, padding_r);
  plan->bwd_weights_pd =
      dnnl::convolution_backward_weights::primitive_desc(bwd_w_desc, engine, plan->fwd_pd);
  plan->bwd_weights = dnnl::convolution_backward_weights(plan->bwd_weights_pd);

  plan->src = memory(src_md, engine, DNNL_MEMORY_NONE);
  plan->dst = memory(dst_md, engine, DNNL_MEMORY_NONE);
  plan->diff_dst = memory(dst_md, engine, DNNL_MEMORY_NONE);
  plan->bias = memory(bias_md, engine, bias_.value.data());
  plan->diff_bias = memory(bias_md, engine, bias_.gradient.data());
  memory user_weights(user_weights_md, engine, kernel_.value.data());
  memory user_diff_weights(user_weights_md, engine, kernel_.gradient.data());

  memory fwd_weights = plan->fwd_pd.weights_desc() == user_weights_md
                           ? user_weights
                           : memory(plan->fwd_pd.weights_desc(), engine);
  plan->weights_to_fwd.Init(user_weights, fwd_weights);
  memory diff_weights = plan->bwd_weights_pd.diff_weights_desc() == user_weights_md
                            ? user_diff_weights
                            : memory(plan->bwd_weights_pd.diff_weights_desc(), engine);
  plan->diff_weights_to_user.Init(diff_weights, user_diff_weights);

  plan->has_bwd_data = input_gradient_;
  if (input_gradient_) {
    dnnl::convolution_backward_data::desc bwd_d_desc(dnnl::algorithm::convolution_direct, src_md,
                                                     any_weights_md, dst_md, strides, padding_l,
                                                     padding_r);
    plan->bwd_data_pd =
        dnnl::convolution_backward_data::primitive_desc(bwd_d_desc, engine, plan->fwd_pd);
    plan->bwd_data = dnnl::convolution_backward_data(plan->bwd_data_pd);
    plan->diff_src = memory(src_md, engine, DNNL_MEMORY_NONE);
    memory bwd_weights = plan->bwd_data_pd.weights_desc() == fwd_weights.get_desc()
                             ? fwd_weights
                             : memory(plan->bwd_data_pd.weights_desc(), engine);
    plan->weights_to_bwd_data.Init(user_weights, bwd_weights);
  }
  Plan& result = *plan;
  plans_[input_shape] = std::move(plan);
  return result;
}

std::string Conv2D::ImplementationInfo() const {
  if (plan_ == nullptr) return "";
  std::string info = "fwd: " + std::string(plan_->fwd_pd.impl_info_str()) +
                     ", bwd_w: " + plan_->bwd_weights_pd.impl_info_str();
  if (plan_->has_bwd_data) info += ", bwd_d: " + std::string(plan_->bwd_data_pd.impl_info_str());
  return info;
}

const Tensor& Conv2D::Rebind(const Tensor& input) {
  input_ = &input;
  plan_ = &PlanFor(input.shape());
  Ensure(output_, plan_->output_shape);
  return output_;
}

const Tensor& Conv2D::Forward(const Tensor& input, bool) {
  Require(input.shape().size() == 4 && input.shape()[3] == in_channels_, name(),
          "expected input [N, H, W, " + std::to_string(in_channels_) + "], got " +
              ShapeString(input.shape()));
  input_ = &input;
  plan_ = &PlanFor(input.shape());
  Ensure(output_, plan_->output_shape);
  auto& stream = context_.stream();
  plan_->src.set_data_handle(const_cast<float*>(input.data()));
  plan_->dst.set_data_handle(output_.data());
  plan_->weights_to_fwd.Run(stream);
  plan_->fwd.execute(stream, {{DNNL_ARG_SRC, plan_->src},
                              {DNNL_ARG_WEIGHTS, plan_->weights_to_fwd.to},
                              {DNNL_ARG_BIAS, plan_->bias},
                              {DNNL_ARG_DST, plan_->dst}});
  stream.wait();
  return output_;
}

const Tensor& Conv2D::Backward(const Tensor& grad_output) {
  Require(input_ != nullptr && grad_output.shape() == output_.shape(), name(),
          "gradient shape " + ShapeString(grad_output.shape()) + " does not match output " +
              ShapeString(output_.shape()));
  if (plan_->has_bwd_data != input_gradient_) plan_ = &PlanFor(input_->shape());
  const Tensor* dy = &grad_output;
  if (activation_ == Activation::kRelu && !skip_relu_mask_) {
    ReluMask(output_, grad_output, masked_grad_);
    dy = &masked_grad_;
  }
  auto& stream = context_.stream();
  plan_->src.set_data_handle(const_cast<float*>(input_->data()));
  plan_->diff_dst.set_data_handle(const_cast<float*>(dy->data()));
  plan_->bwd_weights.execute(stream, {{DNNL_ARG_SRC, plan_->src},
                                      {DNNL_ARG_DIFF_DST, plan_->diff_dst},
                                      {DNNL_ARG_DIFF_WEIGHTS, plan_->diff_weights_to_user.from},
                                      {DNNL_ARG_DIFF_BIAS, plan_->diff_bias}});
  plan_->diff_weights_to_user.Run(stream);
  if (input_gradient_) {
    Ensure(input_grad_, input_->shape());
    plan_->diff_src.set_data_handle(input_grad_.data());
    // Backward data may want the kernel in another layout than forward did.
    if (plan_->weights_to_bwd_data.to.get_data_handle() !=
        plan_->weights_to_fwd.to.get_data_handle()) {
      plan_->weights_to_bwd_data.Run(stream);
    }
    plan_->bwd_data.execute(stream, {{DNNL_ARG_DIFF_DST, plan_->diff_dst},
                                     {DNNL_ARG_WEIGHTS, plan_->weights_to_bwd_data.to},
                                     {DNNL_ARG_DIFF_SRC, plan_->diff_src}});
  } else {
    input_grad_ = Tensor();
  }
  stream.wait();
  return input_grad_;
}

// ----------------------------------------------------------------------------------------------
// MaxPool2D

struct MaxPool2D::Plan {
  Shape output_shape;
  dnnl::pooling_forward::primitive_desc fwd_pd;
  dnnl::pooling_forward fwd;
  dnnl::pooling_backward::primitive_desc bwd_pd;
  dnnl::pooling_backward bwd;
  memory src, dst, workspace, diff_dst, diff_src;
};

MaxPool2D::MaxPool2D(std::string name, ComputeContext& context, std::int64_t pool,
                     std::int64_t stride)
    : Layer(std::move(name)), context_(context), pool_(pool), stride_(stride) {}

MaxPool2D::~MaxPool2D() = default;

std::span<std::uint8_t> MaxPool2D::Workspace() {
  if (plan_ == nullptr) return {};
  return {static_cast<std::uint8_t*>(plan_->workspace.get_data_handle()),
          plan_->workspace.get_desc().get_size()};
}

std::string MaxPool2D::ImplementationInfo() const {
  if (plan_ == nullptr) return "";
  return "fwd: " + std::string(plan_->fwd_pd.impl_info_str()) +
         ", bwd: " + plan_->bwd_pd.impl_info_str();
}

MaxPool2D::Plan& MaxPool2D::PlanFor(const Shape& input_shape) {
  auto it = plans_.find(input_shape);
  if (it != plans_.end()) return *it->second;
  const std::int64_t n = input_shape[0], h = input_shape[1], w = input_shape[2], c = input_shape[3];
  const std::int64_t oh = (h - pool_) / stride_ + 1, ow = (w - pool_) / stride_ + 1;
  Require(oh > 0 && ow > 0, name(),
          "input " + ShapeString(input_shape) + " is smaller than the pool");
  auto plan = std::make_unique<Plan>();
  plan->output_shape = {n, oh, ow, c};
  auto& engine = context_.engine();
  const memory::desc src_md({n, c, h, w}, dt::f32, tag::nhwc);
  const memory::desc dst_md({n, c, oh, ow}, dt::f32, tag::nhwc);
  const memory::dims strides = {stride_, stride_}, kernel = {pool_, pool_}, pad = {0, 0};
  dnnl::pooling_forward::desc fwd_desc(dnnl::prop_kind::forward_training,
                                       dnnl::algorithm::pooling_max, src_md, dst_md, strides,
                                       kernel, pad, pad);
  plan->fwd_pd = dnnl::pooling_forward::primitive_desc(fwd_desc, engine);
  plan->fwd = dnnl::pooling_forward(plan->fwd_pd);
  dnnl::pooling_backward::desc bwd_desc(dnnl::algorithm::pooling_max, src_md, dst_md, strides,
                                        kernel, pad, pad);
  plan->bwd_pd = dnnl::pooling_backward::primitive_desc(bwd_desc, engine, plan->fwd_pd);
  plan->bwd = dnnl::pooling_backward(plan->bwd_pd);
  plan->src = memory(src_md, engine, DNNL_MEMORY_NONE);
  plan->dst = memory(dst_md, engine, DNNL_MEMORY_NONE);
  plan->diff_dst = memory(dst_md, engine, DNNL_MEMORY_NONE);
  plan->diff_src = memory(src_md, engine, DNNL_MEMORY_NONE);
  plan->workspace = memory(plan->fwd_pd.workspace_desc(), engine);
  Plan& result = *plan;
  plans_[input_shape] = std::move(plan);
  return result;
}

const Tensor& MaxPool2D::Rebind(const Tensor& input) {
  input_ = &input;
  plan_ = &PlanFor(input.shape());
  Ensure(output_, plan_->output_shape);
  return output_;
}

const Tensor& MaxPool2D::Forward(const Tensor& input, bool) {
  Require(input.shape().size() == 4, name(),
          "expected input [N, H, W, C], got " + ShapeString(input.shape()));
  input_ = &input;
  plan_ = &PlanFor(input.shape());
  Ensure(output_, plan_->output_shape);
  auto& stream = context_.stream();
  plan_->src.set_data_handle(const_cast<float*>(input.data()));
  plan_->dst.set_data_handle(output_.data());
  plan_->fwd.execute(stream, {{DNNL_ARG_SRC, plan_->src},
                              {DNNL_ARG_DST, plan_->dst},
                              {DNNL_ARG_WORKSPACE, plan_->workspace}});
  stream.wait();
  return output_;
}

const Tensor& MaxPool2D::Backward(const Tensor& grad_output) {
  Require(input_ != nullptr && grad_output.shape() == output_.shape(), name(),
          "gradient shape " + ShapeString(grad_output.shape()) + " does not match output " +
              ShapeString(output_.shape()));
  if (!input_gradient_) {
    input_grad_ = Tensor();
    return input_grad_;
  }
  Ensure(input_grad_, input_->shape());
  const Tensor* dy = &grad_output;
  if (relu_input_) {
    ReluMask(output_, grad_output, masked_grad_);
    dy = &masked_grad_;
  }
  auto& stream = context_.stream();
  plan_->diff_dst.set_data_handle(const_cast<float*>(dy->data()));
  plan_->diff_src.set_data_handle(input_grad_.data());
  plan_->bwd.execute(stream, {{DNNL_ARG_DIFF_DST, plan_->diff_dst},
                              {DNNL_ARG_WORKSPACE, plan_->workspace},
                              {DNNL_ARG_DIFF_SRC, plan_->diff_src}});
  stream.wait();
  return input_grad_;
}

// ----------------------------------------------------------------------------------------------
// ChunkedConvPool

ChunkedConvPool::ChunkedConvPool(std::unique_ptr<Conv2D> conv, std::unique_ptr<MaxPool2D> pool,
                                 std::int64_t chunk)
    : Layer(conv->name() + "+" + pool->name()),
      conv_(std::move(conv)),
      pool_(std::move(pool)),
      chunk_(chunk) {
  Require(chunk_ >= 1, name(), "chunk must be >= 1");
  Require(conv_->SkipReluMask(), name(), "the convolution must have a ReLU activation");
}

void ChunkedConvPool::CopyChunk(const Tensor& from, std::int64_t begin, std::int64_t count,
                                Tensor& to) {
  Shape shape = from.shape();
  shape[0] = count;
  Ensure(to, shape);
  const std::int64_t per_example = from.size() / from.shape()[0];
  std::copy_n(from.data() + begin * per_example, count * per_example, to.data());
}

const Tensor& ChunkedConvPool::Forward(const Tensor& input, bool training) {
  Require(input.shape().size() == 4 && input.shape()[0] > 0, name(),
          "expected input [N, H, W, C], got " + ShapeString(input.shape()));
  input_ = &input;
  const std::int64_t n = input.shape()[0];
  for (std::int64_t begin = 0; begin < n; begin += chunk_) {
    const std::int64_t count = std::min(chunk_, n - begin);
    CopyChunk(input, begin, count, chunk_input_);
    const Tensor& pooled = pool_->Forward(conv_->Forward(chunk_input_, training), training);
    const auto workspace = pool_->Workspace();
    const std::size_t index = static_cast<std::size_t>(begin / chunk_);
    if (workspaces_.size() <= index) workspaces_.resize(index + 1);
    workspaces_[index].assign(workspace.begin(), workspace.end());
    if (begin == 0) {
      Shape shape = pooled.shape();
      shape[0] = n;
      Ensure(output_, shape);
    }
    std::copy_n(pooled.data(), pooled.size(), output_.data() + begin * (output_.size() / n));
  }
  return output_;
}

const Tensor& ChunkedConvPool::Backward(const Tensor& grad_output) {
  Require(input_ != nullptr && grad_output.shape() == output_.shape(), name(),
          "gradient shape " + ShapeString(grad_output.shape()) + " does not match output " +
              ShapeString(output_.shape()));
  conv_->set_input_gradient(input_gradient_);
  const std::int64_t n = input_->shape()[0];
  Variable& kernel = conv_->kernel();
  Variable& bias = conv_->bias();
  Ensure(kernel_grad_, kernel.value.shape());
  Ensure(bias_grad_, bias.value.shape());
  Zeros(kernel_grad_);
  Zeros(bias_grad_);
  if (input_gradient_) Ensure(input_grad_, input_->shape());
  // The ReLU mask of the convolution, applied on the pooled gradient (see MaxPool2D).
  ReluMask(output_, grad_output, masked_grad_);
  for (std::int64_t begin = 0; begin < n; begin += chunk_) {
    const std::int64_t count = std::min(chunk_, n - begin);
    // Point both layers at this chunk: the conv at its input, the pool at its shape and argmax.
    CopyChunk(*input_, begin, count, chunk_input_);
    pool_->Rebind(conv_->Rebind(chunk_input_));
    const auto& saved = workspaces_[static_cast<std::size_t>(begin / chunk_)];
    std::copy(saved.begin(), saved.end(), pool_->Workspace().begin());
    CopyChunk(masked_grad_, begin, count, chunk_grad_);
    const Tensor& input_grad = conv_->Backward(pool_->Backward(chunk_grad_));
    for (std::int64_t i = 0; i < kernel_grad_.size(); ++i) {
      kernel_grad_.data()[i] += kernel.gradient.data()[i];
    }
    for (std::int64_t i = 0; i < bias_grad_.size(); ++i) {
      bias_grad_.data()[i] += bias.gradient.data()[i];
    }
    if (input_gradient_) {
      std::copy_n(input_grad.data(), input_grad.size(),
                  input_grad_.data() + begin * (input_->size() / n));
    }
  }
  std::copy_n(kernel_grad_.data(), kernel_grad_.size(), kernel.gradient.data());
  std::copy_n(bias_grad_.data(), bias_grad_.size(), bias.gradient.data());
  if (!input_gradient_) input_grad_ = Tensor();
  return input_grad_;
}

// ----------------------------------------------------------------------------------------------
// ReLU, Dropout, Flatten

const Tensor& ReLU::Forward(const Tensor& input, bool) {
  Ensure(output_, input.shape());
  const float* x = input.data();
  float* y = output_.data();
  for (std::int64_t i = 0; i < input.size(); ++i) y[i] = std::max(x[i], 0.0f);
  return output_;
}

const Tensor& ReLU::Backward(const Tensor& grad_output) {
  Require(grad_output.shape() == output_.shape(), name(), "gradient shape mismatch");
  ReluMask(output_, grad_output, input_grad_);
  return input_grad_;
}

Dropout::Dropout(std::string name, float rate, std::uint64_t seed)
    : Layer(std::move(name)), rate_(rate), rng_(seed) {
  Require(rate >= 0.0f && rate < 1.0f, this->name(), "rate must be in [0, 1)");
}

const Tensor& Dropout::Forward(const Tensor& input, bool training) {
  Ensure(output_, input.shape());
  applied_ = training && rate_ > 0.0f;
  if (!applied_) {
    std::copy_n(input.data(), input.size(), output_.data());
    return output_;
  }
  Ensure(mask_, input.shape());
  const float scale = 1.0f / (1.0f - rate_);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  float* m = mask_.data();
  float* y = output_.data();
  const float* x = input.data();
  for (std::int64_t i = 0; i < input.size(); ++i) {
    m[i] = uniform(rng_) < rate_ ? 0.0f : scale;
    y[i] = x[i] * m[i];
  }
  return output_;
}

const Tensor& Dropout::Backward(const Tensor& grad_output) {
  Require(grad_output.shape() == output_.shape(), name(), "gradient shape mismatch");
  Ensure(input_grad_, grad_output.shape());
  if (!applied_) {
    std::copy_n(grad_output.data(), grad_output.size(), input_grad_.data());
    return input_grad_;
  }
  for (std::int64_t i = 0; i < grad_output.size(); ++i) {
    input_grad_.data()[i] = grad_output.data()[i] * mask_.data()[i];
  }
  return input_grad_;
}

const Tensor& Flatten::Forward(const Tensor& input, bool) {
  Require(!input.shape().empty(), name(), "input must have a batch dimension");
  input_shape_ = input.shape();
  const std::int64_t n = input.shape()[0];
  Ensure(output_, {n, n == 0 ? 0 : input.size() / n});
  std::copy_n(input.data(), input.size(), output_.data());
  return output_;
}

const Tensor& Flatten::Backward(const Tensor& grad_output) {
  Require(grad_output.shape() == output_.shape(), name(), "gradient shape mismatch");
  if (!input_gradient_) {
    input_grad_ = Tensor();
    return input_grad_;
  }
  Ensure(input_grad_, input_shape_);
  std::copy_n(grad_output.data(), grad_output.size(), input_grad_.data());
  return input_grad_;
}

// ----------------------------------------------------------------------------------------------
// Losses

absl::StatusOr<SoftmaxCrossEntropy::Result> SoftmaxCrossEntropy::Forward(
    const Tensor& logits, std::span<const std::int32_t> labels) {
  if (logits.shape().size() != 2 || logits.shape()[0] != static_cast<std::int64_t>(labels.size())) {
    return absl::InvalidArgumentError("softmax_cross_entropy: logits " +
                                      ShapeString(logits.shape()) + " do not match " +
                                      std::to_string(labels.size()) + " labels");
  }
  const std::int64_t n = logits.shape()[0], classes = logits.shape()[1];
  for (std::size_t r = 0; r < labels.size(); ++r) {
    if (labels[r] < 0 || labels[r] >= classes) {
      return absl::InvalidArgumentError("softmax_cross_entropy: label " +
                                        std::to_string(labels[r]) + " at row " + std::to_string(r) +
                                        " is outside [0, " + std::to_string(classes) + ")");
    }
  }
  Ensure(grad_, logits.shape());
  Result result;
  double total = 0.0;
  const float inv_n = n > 0 ? 1.0f / static_cast<float>(n) : 0.0f;
  for (std::int64_t r = 0; r < n; ++r) {
    const float* z = logits.data() + r * classes;
    float* g = grad_.data() + r * classes;
    const std::int32_t label = labels[r];
    const std::int64_t argmax = std::max_element(z, z + classes) - z;
    const float max = z[argmax];
    double sum = 0.0;
    for (std::int64_t c = 0; c < classes; ++c) {
      g[c] = std::exp(z[c] - max);
      sum += g[c];
    }
    total += std::log(sum) - (z[label] - max);
    const float inv_sum = static_cast<float>(1.0 / sum);
    for (std::int64_t c = 0; c < classes; ++c) g[c] = g[c] * inv_sum * inv_n;
    g[label] -= inv_n;
    if (argmax == label) ++result.correct;
  }
  result.loss = n > 0 ? static_cast<float>(total / static_cast<double>(n)) : 0.0f;
  return result;
}

float L2Loss(const std::vector<Variable*>& variables, float scale) {
  double sum = 0.0;
  for (const Variable* variable : variables) {
    for (float w : variable->value.values()) sum += static_cast<double>(w) * w;
  }
  return static_cast<float>(0.5 * scale * sum);
}

void AddL2Gradients(const std::vector<Variable*>& variables, float scale) {
  for (Variable* variable : variables) {
    const float* w = variable->value.data();
    float* g = variable->gradient.data();
    for (std::int64_t i = 0; i < variable->value.size(); ++i) g[i] += scale * w[i];
  }
}

}  // namespace taas::nn
