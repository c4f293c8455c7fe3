#include "taas/nn/max_pool2d.h"

#include "layer_internal.h"

namespace taas::nn {
namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

}  // namespace

struct MaxPool2D::Plan {
  Shape output_shape;
  dnnl::pooling_forward::primitive_desc fwd_pd;
  dnnl::pooling_forward fwd;
  dnnl::pooling_backward::primitive_desc bwd_pd;
  dnnl::pooling_backward bwd;
  memory src, dst, workspace, diff_dst, diff_src;
};

MaxPool2D::MaxPool2D(ComputeContext& context, MaxPool2DOptions options)
    : Layer(std::move(options.name)),
      context_(context),
      pool_size_(options.pool_size),
      strides_(options.strides.value_or(options.pool_size)) {}

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

absl::StatusOr<PoolGeometry> MaxPool2D::GeometryFor(const Shape& input_shape) const {
  if (input_shape.size() != 4) {
    return internal::InputShapeError(name(), "[N, H, W, C]", input_shape);
  }
  PoolGeometry g{.n = input_shape[0],
                 .h = input_shape[1],
                 .w = input_shape[2],
                 .c = input_shape[3],
                 .window = pool_size_,
                 .strides = strides_};
  if (g.h < pool_size_ || g.w < pool_size_) {
    const std::string p = std::to_string(pool_size_);
    return internal::InputShapeError(name(), "[N, H >= " + p + ", W >= " + p + ", C]", input_shape);
  }
  g.out_h = (g.h - pool_size_) / strides_ + 1;
  g.out_w = (g.w - pool_size_) / strides_ + 1;
  return g;
}

absl::StatusOr<MaxPool2D::Plan*> MaxPool2D::PlanFor(const Shape& input_shape) {
  if (Plan* kept = internal::FindPlan(plans_, input_shape)) return kept;
  TAAS_ASSIGN_OR_RETURN(const PoolGeometry g, GeometryFor(input_shape));
  const std::int64_t n = g.n, h = g.h, w = g.w, c = g.c, oh = g.out_h, ow = g.out_w;
  return internal::CallDnnl(name(), [&]() -> absl::StatusOr<Plan*> {
    auto plan = std::make_unique<Plan>();
    plan->output_shape = {n, oh, ow, c};
    auto& engine = context_.engine();
    const memory::desc src_md({n, c, h, w}, dt::f32, tag::nhwc);
    const memory::desc dst_md({n, c, oh, ow}, dt::f32, tag::nhwc);
    const memory::dims strides = {strides_, strides_}, kernel = {pool_size_, pool_size_},
                       pad = {0, 0};
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
    return internal::KeepPlan(plans_, input_shape, std::move(plan));
  });
}

absl::StatusOr<const Tensor*> MaxPool2D::Rebind(const Tensor& input) {
  input_ = nullptr;
  TAAS_ASSIGN_OR_RETURN(plan_, PlanFor(input.shape()));
  input_ = &input;
  internal::Ensure(output_, plan_->output_shape);
  return &output_;
}

absl::StatusOr<const Tensor*> MaxPool2D::Forward(const Tensor& input, bool) {
  if (!input.device().is_cpu()) return ForwardOnDevice(input);
  TAAS_RETURN_IF_ERROR(Rebind(input).status());
  return internal::CallDnnl(name(), [&]() -> absl::StatusOr<const Tensor*> {
    auto& stream = context_.stream();
    plan_->src.set_data_handle(const_cast<float*>(input.data()));
    plan_->dst.set_data_handle(output_.data());
    plan_->fwd.execute(stream, {{DNNL_ARG_SRC, plan_->src},
                                {DNNL_ARG_DST, plan_->dst},
                                {DNNL_ARG_WORKSPACE, plan_->workspace}});
    stream.wait();
    return &output_;
  });
}

absl::StatusOr<const Tensor*> MaxPool2D::Backward(const Tensor& grad_output) {
  TAAS_RETURN_IF_ERROR(internal::CheckGradient(name(), input_ != nullptr, grad_output, output_));
  if (!input_gradient_) {
    input_grad_ = Tensor();
    return &input_grad_;
  }
  if (!grad_output.device().is_cpu()) return BackwardOnDevice(grad_output);
  internal::Ensure(input_grad_, input_->shape());
  const Tensor* dy = &grad_output;
  if (relu_input_) {
    internal::ReluMask(output_, grad_output, masked_grad_);
    dy = &masked_grad_;
  }
  return internal::CallDnnl(name(), [&]() -> absl::StatusOr<const Tensor*> {
    auto& stream = context_.stream();
    plan_->diff_dst.set_data_handle(const_cast<float*>(dy->data()));
    plan_->diff_src.set_data_handle(input_grad_.data());
    plan_->bwd.execute(stream, {{DNNL_ARG_DIFF_DST, plan_->diff_dst},
                                {DNNL_ARG_WORKSPACE, plan_->workspace},
                                {DNNL_ARG_DIFF_SRC, plan_->diff_src}});
    stream.wait();
    return &input_grad_;
  });
}

absl::StatusOr<const Tensor*> MaxPool2D::ForwardOnDevice(const Tensor& input) {
  const Device device = input.device();
  input_ = nullptr;
  TAAS_ASSIGN_OR_RETURN(geometry_, GeometryFor(input.shape()));
  TAAS_RETURN_IF_ERROR(internal::OnDevice(name(), device, [&](DeviceKernels& kernels) {
    internal::Ensure(output_, {geometry_.n, geometry_.out_h, geometry_.out_w, geometry_.c}, device);
    return kernels.MaxPoolForward(device_state_, geometry_, input, output_);
  }));
  input_ = &input;
  return &output_;
}

absl::StatusOr<const Tensor*> MaxPool2D::BackwardOnDevice(const Tensor& grad_output) {
  const Device device = grad_output.device();
  return internal::OnDevice(
      name(), device, [&](DeviceKernels& kernels) -> absl::StatusOr<const Tensor*> {
        const Tensor* dy = &grad_output;
        if (relu_input_) {
          internal::Ensure(masked_grad_, grad_output.shape(), device);
          TAAS_RETURN_IF_ERROR(kernels.ReluMask(output_, grad_output, masked_grad_));
          dy = &masked_grad_;
        }
        internal::Ensure(input_grad_, input_->shape(), device);
        TAAS_RETURN_IF_ERROR(
            kernels.MaxPoolBackward(device_state_, geometry_, *input_, output_, *dy, input_grad_));
        return &input_grad_;
      });
}

}  // namespace taas::nn
