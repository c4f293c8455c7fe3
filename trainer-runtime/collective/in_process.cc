#include "taas/collective/in_process.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>

namespace taas::collective {
namespace {

using Clock = std::chrono::steady_clock;

// One operation as the members meet at it, keyed by its sequence number: every member issues the
// same operations in the same order, so the n-th call of each member is the same operation.
struct Meeting {
  std::vector<std::span<std::byte>> buffers;  // each member's, as bytes
  int arrived = 0;
  int reduced = 0;     // members done with their slice of the sum
  bool ready = false;  // member 0's buffer holds the result
  int copied = 0;      // members that copied the result out
  absl::Status status;
};

class Group;

class Member final : public Collective {
 public:
  Member(Group* group, int index) : group_(group), index_(index) {}
  int rank() const override;
  int size() const override;
  std::string Describe() const override;
  Handle AllReduce(std::span<float> data, ReduceOp op) override;
  Handle Broadcast(std::span<std::byte> data, int root) override;

 private:
  Group* group_;
  int index_;
  std::uint64_t next_sequence_ = 0;
};

class Group final : public InProcessGroup {
 public:
  explicit Group(InProcessOptions options) : options_(std::move(options)) {
    for (int m = 0; m < options_.members; ++m) members_.emplace_back(this, m);
  }

  Collective& member(int m) override { return members_.at(static_cast<std::size_t>(m)); }
  int members() const override { return options_.members; }

  void Abort(const absl::Status& status) override {
    {
      std::lock_guard lock(mu_);
      if (aborted_.ok()) aborted_ = status.ok() ? absl::AbortedError("group aborted") : status;
    }
    changed_.notify_all();
  }

  int workers() const { return options_.cross ? options_.cross->size() : 1; }
  int worker() const { return options_.cross ? options_.cross->rank() : 0; }

  absl::Status AllReduce(int member, std::uint64_t sequence, std::span<float> data, ReduceOp op) {
    std::unique_lock lock(mu_);
    TAAS_ASSIGN_OR_RETURN(Meeting * meeting, Arrive(lock, member, sequence,
                                                    std::as_writable_bytes(data), "all-reduce"));
    std::vector<std::span<float>> buffers;
    for (auto b : meeting->buffers) {
      buffers.emplace_back(reinterpret_cast<float*>(b.data()), b.size() / sizeof(float));
    }
    // Each member sums its slice over every member, in member order, into member 0's buffer: the
    // same order, so the same bits, whichever thread does it.
    lock.unlock();
    const std::size_t n = data.size(), members = buffers.size();
    const std::size_t begin = n * static_cast<std::size_t>(member) / members;
    const std::size_t end = n * static_cast<std::size_t>(member + 1) / members;
    float* out = buffers[0].data();
    for (std::size_t m = 1; m < members; ++m) {
      const float* in = buffers[m].data();
      for (std::size_t i = begin; i < end; ++i) out[i] += in[i];
    }
    lock.lock();
    ++meeting->reduced;
    changed_.notify_all();
    if (member == 0) {
      TAAS_RETURN_IF_ERROR(Await(lock, sequence, "all-reduce",
                                 [&] { return meeting->reduced == static_cast<int>(members); }));
      lock.unlock();
      absl::Status status = options_.cross ? options_.cross->AllReduce(data, ReduceOp::kSum).Wait()
                                           : absl::OkStatus();
      if (status.ok() && op == ReduceOp::kMean) {
        const float total = static_cast<float>(members * static_cast<std::size_t>(workers()));
        for (float& x : data) x /= total;
      }
      lock.lock();
      return Publish(lock, sequence, *meeting, std::move(status), "all-reduce");
    }
    return CopyResult(lock, member, sequence, *meeting, "all-reduce");
  }

  absl::Status Broadcast(int member, std::uint64_t sequence, std::span<std::byte> data, int root) {
    const int members = options_.members;
    if (root < 0 || root >= members * workers()) {
      return absl::InvalidArgumentError("broadcast root " + std::to_string(root) +
                                        " is not a rank of this group of " +
                                        std::to_string(members * workers()));
    }
    std::unique_lock lock(mu_);
    TAAS_ASSIGN_OR_RETURN(Meeting * meeting, Arrive(lock, member, sequence, data, "broadcast"));
    if (member != 0) return CopyResult(lock, member, sequence, *meeting, "broadcast");
    // Member 0 gathers the root's bytes (when the root is one of ours), then shares them across
    // workers, then with the other members.
    const int root_worker = root / members, root_member = root % members;
    if (root_worker == worker() && root_member != 0) {
      const auto source = meeting->buffers[static_cast<std::size_t>(root_member)];
      // An empty span's data may be null, which memcpy may not be given even for 0 bytes.
      if (!data.empty()) std::memcpy(data.data(), source.data(), data.size());
    }
    lock.unlock();
    absl::Status status =
        options_.cross ? options_.cross->Broadcast(data, root_worker).Wait() : absl::OkStatus();
    lock.lock();
    return Publish(lock, sequence, *meeting, std::move(status), "broadcast");
  }

  std::string Describe() const {
    std::string out = std::to_string(options_.members) + " replicas in process";
    if (options_.cross) out += ", across workers: " + options_.cross->Describe();
    return out;
  }

 private:
  // Registers `member`'s buffer with the meeting of `sequence` and waits for every member.
  absl::StatusOr<Meeting*> Arrive(std::unique_lock<std::mutex>& lock, int member,
                                  std::uint64_t sequence, std::span<std::byte> data,
                                  const char* what) {
    Meeting& meeting = meetings_[sequence];
    if (meeting.buffers.empty()) meeting.buffers.resize(static_cast<std::size_t>(members()));
    meeting.buffers[static_cast<std::size_t>(member)] = data;
    ++meeting.arrived;
    changed_.notify_all();
    TAAS_RETURN_IF_ERROR(Await(lock, sequence, what, [&] { return meeting.arrived == members(); }));
    for (const auto& other : meeting.buffers) {
      if (other.size() != data.size()) {
        return absl::FailedPreconditionError(
            std::string(what) + " #" + std::to_string(sequence) + ": member " +
            std::to_string(member) + " passed " + std::to_string(data.size()) +
            " bytes, another member " + std::to_string(other.size()) +
            ": the replicas of a worker must issue the same operations");
      }
    }
    return &meeting;
  }

  // Member 0: makes the result (or its failure) visible and waits until every member copied it,
  // since the result lives in member 0's buffer.
  absl::Status Publish(std::unique_lock<std::mutex>& lock, std::uint64_t sequence, Meeting& meeting,
                       absl::Status status, const char* what) {
    meeting.status = status;
    meeting.ready = true;
    changed_.notify_all();
    absl::Status copied =
        Await(lock, sequence, what, [&] { return meeting.copied == members() - 1; });
    meetings_.erase(sequence);
    return status.ok() ? copied : status;
  }

  // Members other than 0: wait for the result and copy it.
  absl::Status CopyResult(std::unique_lock<std::mutex>& lock, int member, std::uint64_t sequence,
                          Meeting& meeting, const char* what) {
    TAAS_RETURN_IF_ERROR(Await(lock, sequence, what, [&] { return meeting.ready; }));
    if (meeting.status.ok()) {
      const auto source = meeting.buffers[0];
      const auto target = meeting.buffers[static_cast<std::size_t>(member)];
      lock.unlock();
      if (!target.empty()) std::memcpy(target.data(), source.data(), target.size());
      lock.lock();
    }
    absl::Status status = meeting.status;
    ++meeting.copied;
    changed_.notify_all();
    return status;
  }

  // Waits until `done`, the group is aborted, or the timeout passes.
  template <class Done>
  absl::Status Await(std::unique_lock<std::mutex>& lock, std::uint64_t sequence, const char* what,
                     Done done) {
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(options_.timeout_secs));
    if (!changed_.wait_until(lock, deadline, [&] { return !aborted_.ok() || done(); })) {
      return absl::DeadlineExceededError(
          std::string(what) + " #" + std::to_string(sequence) + ": the replicas of this worker " +
          "did not all arrive within " + std::to_string(options_.timeout_secs) +
          " s (one is stuck in train() or failed)");
    }
    return aborted_;
  }

  InProcessOptions options_;
  std::deque<Member> members_;  // deque: members never move, Collective& stays valid
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::uint64_t, Meeting> meetings_;
  absl::Status aborted_;
};

int Member::rank() const { return group_->worker() * group_->members() + index_; }
int Member::size() const { return group_->workers() * group_->members(); }
std::string Member::Describe() const { return group_->Describe(); }

Handle Member::AllReduce(std::span<float> data, ReduceOp op) {
  return Handle(group_->AllReduce(index_, next_sequence_++, data, op));
}

Handle Member::Broadcast(std::span<std::byte> data, int root) {
  return Handle(group_->Broadcast(index_, next_sequence_++, data, root));
}

}  // namespace

absl::StatusOr<std::unique_ptr<InProcessGroup>> InProcessGroup::Create(InProcessOptions options) {
  if (options.members < 1) {
    return absl::InvalidArgumentError("an in-process group needs at least 1 member, got " +
                                      std::to_string(options.members));
  }
  return std::unique_ptr<InProcessGroup>(new Group(std::move(options)));
}

}  // namespace taas::collective
