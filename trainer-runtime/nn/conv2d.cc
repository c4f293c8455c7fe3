#include "taas/nn/conv2d.h"

#include <algorithm>
#include <tuple>

#include "layer_internal.h"
#include "taas/nn/host_kernels.h"

namespace taas::nn {
namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

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
  // Division truncates towards zero: an input smaller than the kernel would get one output.
  return in < kernel ? 0 : (in - kernel) / stride + 1;
}

// A reorder between two memories that is skipped when both have the same layout.
struct MaybeReorder {
  void Init(const memory& from_memory, const memory& to_memory) {
    from = from_memory;
    to = to_memory;
    if (from.get_desc() != to.get_desc()) primitive = dnnl::reorder(from, to);
  }
  void Run(dnnl::stream& stream) {
    if (primitive) primitive.execute(stream, from, to);
  }
  memory from, to;
  dnnl::reorder primitive;
};

}  // namespace

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

Conv2D::Conv2D(ComputeContext& context, Conv2DOptions options)
    : Layer(std::move(options.name)),
      context_(context),
      in_channels_(options.in_channels),
      filters_(options.filters),
      kernel_size_(options.kernel_size),
      strides_(options.strides),
      padding_(options.padding),
      activation_(options.activation),
      regularizer_(options.kernel_regularizer),
      kernel_{"", Tensor({kernel_size_, kernel_size_, in_channels_, filters_}),
              Tensor({kernel_size_, kernel_size_, in_channels_, filters_})},
      bias_{"", Tensor({filters_}), Tensor({filters_})} {
  // Named before the initialisers run: a random one is seeded with its variable's name.
  std::tie(kernel_.name, bias_.name) =
      internal::KernelAndBiasNames(this->name(), options.kernel_name, options.bias_name);
  internal::InitializeVariable(this->name(), "kernel_initializer", options.kernel_initializer,
                               kernel_);
  internal::InitializeVariable(this->name(), "bias_initializer", options.bias_initializer, bias_);
  internal::CheckRegularizer(this->name(), regularizer_);
}

Conv2D::~Conv2D() = default;

absl::Status Conv2D::AddRegularizationLoss(Tensor& total) {
  return internal::AddPenaltyLoss(name(), regularizer_, kernel_, total);
}

bool Conv2D::SkipReluMask() {
  if (activation_ != Activation::kRelu) return false;
  skip_relu_mask_ = true;
  return true;
}

absl::StatusOr<ConvGeometry> Conv2D::GeometryFor(const Shape& input_shape) const {
  ConvGeometry g{.n = input_shape[0],
                 .h = input_shape[1],
                 .w = input_shape[2],
                 .c = in_channels_,
                 .filters = filters_,
                 .kernel_size = kernel_size_,
                 .strides = strides_};
  g.out_h = OutputSize(g.h, kernel_size_, strides_, padding_, &g.pad_top, &g.pad_bottom);
  g.out_w = OutputSize(g.w, kernel_size_, strides_, padding_, &g.pad_left, &g.pad_right);
  if (g.out_h <= 0 || g.out_w <= 0) {
    const std::string k = std::to_string(kernel_size_);
    return internal::InputShapeError(
        name(), "[N, H >= " + k + ", W >= " + k + ", " + std::to_string(in_channels_) + "]",
        input_shape);
  }
  return g;
}

absl::StatusOr<Conv2D::Plan*> Conv2D::PlanFor(const Shape& input_shape) {
  Plan* kept = internal::FindPlan(plans_, input_shape);
  if (kept != nullptr && kept->has_bwd_data == input_gradient_) return kept;

  TAAS_ASSIGN_OR_RETURN(const ConvGeometry g, GeometryFor(input_shape));
  const std::int64_t n = g.n, h = g.h, w = g.w, oh = g.out_h, ow = g.out_w;
  const std::int64_t pad_t = g.pad_top, pad_b = g.pad_bottom, pad_l = g.pad_left,
                     pad_r = g.pad_right;
  return internal::CallDnnl(name(), [&]() -> absl::StatusOr<Plan*> {
    auto plan = std::make_unique<Plan>();
    plan->output_shape = {n, oh, ow, filters_};
    auto& engine = context_.engine();
    const memory::dims src_dims = {n, in_channels_, h, w};
    const memory::dims weights_dims = {filters_, in_channels_, kernel_size_, kernel_size_};
    const memory::dims bias_dims = {filters_};
    const memory::dims dst_dims = {n, filters_, oh, ow};
    const memory::dims strides = {strides_, strides_};
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
    return internal::KeepPlan(plans_, input_shape, std::move(plan));
  });
}

std::string Conv2D::ImplementationInfo() const {
  if (plan_ == nullptr) return "";
  std::string info = "fwd: " + std::string(plan_->fwd_pd.impl_info_str()) +
                     ", bwd_w: " + plan_->bwd_weights_pd.impl_info_str();
  if (plan_->has_bwd_data) info += ", bwd_d: " + std::string(plan_->bwd_data_pd.impl_info_str());
  return info;
}

absl::Status Conv2D::CheckInput(const Tensor& input) const {
  if (input.shape().size() == 4 && input.shape()[3] == in_channels_) return absl::OkStatus();
  return internal::InputShapeError(name(), "[N, H, W, " + std::to_string(in_channels_) + "]",
                                   input.shape());
}

absl::StatusOr<const Tensor*> Conv2D::Rebind(const Tensor& input) {
  input_ = nullptr;
  TAAS_RETURN_IF_ERROR(CheckInput(input));
  TAAS_ASSIGN_OR_RETURN(plan_, PlanFor(input.shape()));
  input_ = &input;
  internal::Ensure(output_, plan_->output_shape);
  return &output_;
}

absl::StatusOr<const Tensor*> Conv2D::Forward(const Tensor& input, bool) {
  input_ = nullptr;
  TAAS_RETURN_IF_ERROR(internal::CheckVariablesOn(name(), input.device(), {&kernel_, &bias_}));
  if (!input.device().is_cpu()) return ForwardOnDevice(input);
  TAAS_RETURN_IF_ERROR(Rebind(input).status());
  return internal::CallDnnl(name(), [&]() -> absl::StatusOr<const Tensor*> {
    auto& stream = context_.stream();
    plan_->src.set_data_handle(const_cast<float*>(input.data()));
    plan_->dst.set_data_handle(output_.data());
    // The variables may have moved since the plan was made (the runtime's buffers).
    plan_->weights_to_fwd.from.set_data_handle(kernel_.value.data());
    plan_->bias.set_data_handle(bias_.value.data());
    plan_->weights_to_fwd.Run(stream);
    plan_->fwd.execute(stream, {{DNNL_ARG_SRC, plan_->src},
                                {DNNL_ARG_WEIGHTS, plan_->weights_to_fwd.to},
                                {DNNL_ARG_BIAS, plan_->bias},
                                {DNNL_ARG_DST, plan_->dst}});
    stream.wait();
    return &output_;
  });
}

absl::StatusOr<const Tensor*> Conv2D::Backward(const Tensor& grad_output) {
  TAAS_RETURN_IF_ERROR(internal::CheckGradient(name(), input_ != nullptr, grad_output, output_));
  if (!grad_output.device().is_cpu()) return BackwardOnDevice(grad_output);
  if (plan_->has_bwd_data != input_gradient_) {
    TAAS_ASSIGN_OR_RETURN(plan_, PlanFor(input_->shape()));
  }
  const Tensor* dy = &grad_output;
  if (activation_ == Activation::kRelu && !skip_relu_mask_) {
    internal::ReluMask(output_, grad_output, masked_grad_);
    dy = &masked_grad_;
  }
  return internal::CallDnnl(name(), [&]() -> absl::StatusOr<const Tensor*> {
    auto& stream = context_.stream();
    plan_->src.set_data_handle(const_cast<float*>(input_->data()));
    plan_->diff_dst.set_data_handle(const_cast<float*>(dy->data()));
    plan_->diff_weights_to_user.to.set_data_handle(kernel_.gradient.data());
    plan_->diff_bias.set_data_handle(bias_.gradient.data());
    if (plan_->has_bwd_data) plan_->weights_to_bwd_data.from.set_data_handle(kernel_.value.data());
    plan_->bwd_weights.execute(stream, {{DNNL_ARG_SRC, plan_->src},
                                        {DNNL_ARG_DIFF_DST, plan_->diff_dst},
                                        {DNNL_ARG_DIFF_WEIGHTS, plan_->diff_weights_to_user.from},
                                        {DNNL_ARG_DIFF_BIAS, plan_->diff_bias}});
    plan_->diff_weights_to_user.Run(stream);
    if (input_gradient_) {
      internal::Ensure(input_grad_, input_->shape());
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
    TAAS_RETURN_IF_ERROR(internal::AddPenaltyGradient(HostKernels(), regularizer_, kernel_));
    return &input_grad_;
  });
}

absl::StatusOr<const Tensor*> Conv2D::ForwardOnDevice(const Tensor& input) {
  const Device device = input.device();
  TAAS_RETURN_IF_ERROR(CheckInput(input));
  TAAS_ASSIGN_OR_RETURN(geometry_, GeometryFor(input.shape()));
  TAAS_RETURN_IF_ERROR(internal::OnDevice(name(), device, [&](DeviceKernels& kernels) {
    internal::Ensure(output_, {geometry_.n, geometry_.out_h, geometry_.out_w, filters_}, device);
    return kernels.ConvForward(device_state_, geometry_, input, kernel_.value, bias_.value,
                               activation_ == Activation::kRelu, output_);
  }));
  input_ = &input;
  return &output_;
}

absl::StatusOr<const Tensor*> Conv2D::BackwardOnDevice(const Tensor& grad_output) {
  const Device device = grad_output.device();
  return internal::OnDevice(
      name(), device, [&](DeviceKernels& kernels) -> absl::StatusOr<const Tensor*> {
        const Tensor* dy = &grad_output;
        if (activation_ == Activation::kRelu && !skip_relu_mask_) {
          internal::Ensure(masked_grad_, grad_output.shape(), device);
          TAAS_RETURN_IF_ERROR(kernels.ReluMask(output_, grad_output, masked_grad_));
          dy = &masked_grad_;
        }
        Tensor* dx = nullptr;
        if (input_gradient_) {
          internal::Ensure(input_grad_, input_->shape(), device);
          dx = &input_grad_;
        } else {
          input_grad_ = Tensor();
        }
        TAAS_RETURN_IF_ERROR(kernels.ConvBackward(device_state_, geometry_, *input_, kernel_.value,
                                                  *dy, kernel_.gradient, bias_.gradient, dx));
        TAAS_RETURN_IF_ERROR(internal::AddPenaltyGradient(kernels, regularizer_, kernel_));
        return &input_grad_;
      });
}

}  // namespace taas::nn
