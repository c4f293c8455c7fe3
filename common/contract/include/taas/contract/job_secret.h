// The per-job secret that authenticates every connection between a job's replicas (parameter
// servers today, collectives later). Shared by the operator (which creates one Secret per TFJob
// and mounts it), the local launcher (which writes the same files for each run) and the runtime
// (which reads them and checks every RPC). Every name here exists once; nothing spells them out.
//
// Two tokens, so that a compromised worker cannot stop or overwrite a parameter server:
//   job token    mounted into every replica; carried by every RPC.
//   chief token  mounted only into the chief (the replica TFJob's master-role rule picks) and the
//                parameter servers; required in addition by Initialize, Snapshot and Shutdown.
// Both are kTokenBytes of random data, hex-encoded, compared in constant time.
#pragma once

#include <cstddef>
#include <string_view>

namespace taas::contract {

// Secret name: "<tfjob name>" + kJobSecretSuffix, in the job's namespace, owned by the TFJob.
inline constexpr std::string_view kJobSecretSuffix = "-taas-job";
inline constexpr std::string_view kJobTokenKey = "job-token";
inline constexpr std::string_view kChiefTokenKey = "chief-token";

// Where the Secret's keys appear in a replica's container (a read-only volume), and the
// environment variables that name the files to the runtime (set in pods and by the launcher).
inline constexpr std::string_view kJobSecretMountPath = "/var/run/secrets/taas/job";
inline constexpr std::string_view kJobTokenFileEnv = "TAAS_JOB_TOKEN_FILE";
inline constexpr std::string_view kChiefTokenFileEnv = "TAAS_CHIEF_TOKEN_FILE";

// The pod's own IP (downward API status.podIP): a parameter server binds to it instead of
// 0.0.0.0 when its TF_CONFIG address is a service name.
inline constexpr std::string_view kPodIpEnv = "TAAS_POD_IP";

// gRPC metadata keys (lower case, as HTTP/2 requires).
inline constexpr std::string_view kJobTokenMetadata = "x-taas-job-token";
inline constexpr std::string_view kChiefTokenMetadata = "x-taas-chief-token";
// Who calls (taas::ReplicaIncarnation): the replica's name ("worker-1") and its incarnation
// (decimal), so that a PS refuses an older incarnation of a replica it has seen (fencing).
inline constexpr std::string_view kReplicaMetadata = "x-taas-replica";
inline constexpr std::string_view kReplicaIncarnationMetadata = "x-taas-replica-incarnation";

inline constexpr std::size_t kTokenBytes = 32;  // Random bytes per token; hex doubles the length.

}  // namespace taas::contract
