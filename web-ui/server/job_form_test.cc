#include "taas/ui_server/job_form.h"

#include <doctest/doctest.h>

namespace taas::ui_server {
namespace {

using nlohmann::json;

json ValidForm() {
  return {{"name", "mnist"},
          {"image", "registry.local:5000/taas/trainer:1.0"},
          {"command", {"/opt/taas/bin/fashion-mnist-cnn"}},
          {"args", {"--max_steps=1000", "it's \"quoted\"; $(rm -rf /)"}},
          {"psReplicas", 1},
          {"workerReplicas", 3},
          {"gpusPerWorker", 2},
          {"psCpu", "1"},
          {"psMemory", "2Gi"},
          {"workerCpu", "4"},
          {"workerMemory", "8Gi"},
          {"mode", "async"},
          {"restartPolicy", "ExitCode"},
          {"backoffLimit", 5}};
}

std::vector<FieldError> Parse(const json& body, JobForm* form = nullptr) {
  JobForm ignored;
  return ParseJobForm(body, "default", form ? form : &ignored);
}

bool HasError(const std::vector<FieldError>& errors, const std::string& field) {
  for (const auto& e : errors) {
    if (e.field == field) return true;
  }
  return false;
}

TEST_CASE("a valid form becomes a TFJob built from JSON values") {
  JobForm form;
  REQUIRE(Parse(ValidForm(), &form).empty());
  const json job = BuildTfJob(form);
  CHECK(job["apiVersion"] == "kubeflow.org/v1");
  CHECK(job["kind"] == "TFJob");
  CHECK(job["metadata"]["name"] == "mnist");
  CHECK(job["metadata"]["namespace"] == "default");
  CHECK(job["spec"]["runPolicy"]["backoffLimit"] == 5);
  const json& worker = job["spec"]["tfReplicaSpecs"]["Worker"];
  CHECK(worker["replicas"] == 3);
  CHECK(worker["restartPolicy"] == "ExitCode");
  const json& container = worker["template"]["spec"]["containers"][0];
  CHECK(container["name"] == "tensorflow");
  CHECK(container["image"] == "registry.local:5000/taas/trainer:1.0");
  CHECK(container["args"][1] == "it's \"quoted\"; $(rm -rf /)");  // passed verbatim, never run
  CHECK(container["resources"]["limits"]["nvidia.com/gpu"] == 2);
  CHECK(container["resources"]["requests"]["memory"] == "8Gi");
  CHECK(container["env"][0] == json{{"name", "TF_SYNC"}, {"value", "false"}});
  const json& ps = job["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0];
  CHECK_FALSE(ps["resources"]["limits"].contains("nvidia.com/gpu"));
  CHECK(ps["resources"]["requests"]["cpu"] == "1");
  CHECK_FALSE(job["spec"]["tfReplicaSpecs"].contains("Chief"));
  CHECK(CheckTfJobRules(job).empty());
}

TEST_CASE("every field is checked and errors name the TFJob field") {
  auto with = [](const char* key, json value) {
    json form = ValidForm();
    form[key] = std::move(value);
    return form;
  };
  CHECK(HasError(Parse(with("workerReplicas", -1)), "spec.tfReplicaSpecs.Worker.replicas"));
  CHECK(HasError(Parse(with("workerReplicas", 0)), "spec.tfReplicaSpecs.Worker.replicas"));
  CHECK(HasError(Parse(with("workerReplicas", "3")), "spec.tfReplicaSpecs.Worker.replicas"));
  CHECK(HasError(Parse(with("workerReplicas", 2.5)), "spec.tfReplicaSpecs.Worker.replicas"));
  CHECK(HasError(Parse(with("psReplicas", 65)), "spec.tfReplicaSpecs.PS.replicas"));
  CHECK(HasError(Parse(with("gpusPerWorker", -2)),
                 "spec.tfReplicaSpecs.Worker.template.spec.containers[0].resources.limits"
                 "[nvidia.com/gpu]"));
  CHECK(HasError(Parse(with("name", "Bad_Name")), "metadata.name"));
  CHECK(HasError(Parse(with("name", "")), "metadata.name"));
  CHECK(HasError(Parse(with("name", std::string(60, 'a'))), "metadata.name"));
  CHECK(HasError(Parse(with("image", "")),
                 "spec.tfReplicaSpecs.Worker.template.spec.containers[0].image"));
  CHECK(HasError(Parse(with("image", "img; rm -rf /")),
                 "spec.tfReplicaSpecs.Worker.template.spec.containers[0].image"));
  CHECK(
      HasError(Parse(with("workerMemory", "lots")),
               "spec.tfReplicaSpecs.Worker.template.spec.containers[0].resources.requests.memory"));
  CHECK(HasError(Parse(with("psCpu", "0")),
                 "spec.tfReplicaSpecs.PS.template.spec.containers[0].resources.requests.cpu"));
  CHECK(HasError(Parse(with("restartPolicy", "Sometimes")),
                 "spec.tfReplicaSpecs.Worker.restartPolicy"));
  CHECK(HasError(Parse(with("mode", "eventually")),
                 "spec.tfReplicaSpecs.Worker.template.spec.containers[0].env[TF_SYNC]"));
  CHECK(HasError(Parse(with("backoffLimit", 1000)), "spec.runPolicy.backoffLimit"));
  CHECK(HasError(Parse(with("args", "--one-string")),
                 "spec.tfReplicaSpecs.Worker.template.spec.containers[0].args"));
  CHECK(HasError(Parse(with("args", json::array({"a\nb"}))),
                 "spec.tfReplicaSpecs.Worker.template.spec.containers[0].args"));
  CHECK(HasError(Parse(with("chief", "yes")), "spec.tfReplicaSpecs.Chief"));
  CHECK(HasError(Parse(with("hostNetwork", true)), "hostNetwork"));
  CHECK(Parse(json::array()).size() == 1);
}

TEST_CASE("strategy collective builds a job of workers without PS replicas or TF_SYNC") {
  json body = ValidForm();
  for (const char* ps_field : {"psReplicas", "psCpu", "psMemory", "mode"}) body.erase(ps_field);
  body["strategy"] = "collective";
  body["evaluator"] = true;
  JobForm form;
  REQUIRE(Parse(body, &form).empty());
  CHECK(form.collective);
  const json job = BuildTfJob(form);
  const json& specs = job["spec"]["tfReplicaSpecs"];
  CHECK_FALSE(specs.contains("PS"));
  CHECK(specs["Worker"]["replicas"] == 3);
  CHECK(specs.contains("Evaluator"));
  const json& container = specs["Worker"]["template"]["spec"]["containers"][0];
  CHECK(container["resources"]["limits"]["nvidia.com/gpu"] == 2);
  for (const json& env : container["env"]) CHECK(env["name"] != "TF_SYNC");
  CHECK(CheckTfJobRules(job).empty());

  // PS fields that say nothing (0, or the sync mode all-reduce has anyway) are fine.
  body["psReplicas"] = 0;
  body["mode"] = "sync";
  CHECK(Parse(body).empty());
  // The default and the explicit parameter-server strategy keep today's job.
  JobForm ps;
  body = ValidForm();
  body["strategy"] = "parameter_server";
  REQUIRE(Parse(body, &ps).empty());
  CHECK_FALSE(ps.collective);
  CHECK(BuildTfJob(ps)["spec"]["tfReplicaSpecs"].contains("PS"));
}

TEST_CASE("a strategy that is no strategy, or contradicted by PS fields, names the field") {
  json body = ValidForm();
  body["strategy"] = "collective";  // ValidForm asks for 1 PS and async mode
  const auto errors = Parse(body);
  CHECK(HasError(errors, "spec.tfReplicaSpecs.PS.replicas"));
  CHECK(HasError(errors, "spec.tfReplicaSpecs.Worker.template.spec.containers[0].env[TF_SYNC]"));
  for (const auto& e : errors) {
    if (e.field == "spec.tfReplicaSpecs.PS.replicas") {
      CHECK(e.message ==
            "psReplicas must be 0 or absent with strategy collective (all-reduce needs no "
            "parameter servers)");
    }
  }
  body["strategy"] = "mirrored";
  CHECK(HasError(Parse(body), "strategy"));
  body["strategy"] = 2;
  CHECK(HasError(Parse(body), "strategy"));
  body["strategy"] = json::array({"collective"});
  CHECK(HasError(Parse(body), "strategy"));
}

TEST_CASE("the shared TFJob rules run on the built job") {
  JobForm form;
  REQUIRE(Parse(ValidForm(), &form).empty());
  form.name = "1mnist";  // a DNS-1123 label, but TFJob names must start with a letter
  const auto errors = CheckTfJobRules(BuildTfJob(form));
  CHECK(HasError(errors, "metadata.name"));
}

TEST_CASE("requests no node can hold are refused before they wait forever") {
  JobForm form;
  REQUIRE(Parse(ValidForm(), &form).empty());
  ClusterLimits limits{32, 256.0 * (1 << 30), 8, 16, 2};
  CHECK(CheckFormAgainstCluster(form, limits).empty());
  form.gpus_per_worker = 16;
  auto errors = CheckFormAgainstCluster(form, limits);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].field == FormFieldPath("gpusPerWorker"));
  CHECK(errors[0].message.find("largest node has 8") != std::string::npos);
  form.gpus_per_worker = 8;
  form.worker_replicas = 3;
  errors = CheckFormAgainstCluster(form, limits);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].field == "spec.tfReplicaSpecs.Worker.replicas");
  form.worker_replicas = 1;
  form.worker_memory = "512Gi";
  errors = CheckFormAgainstCluster(form, limits);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].field == FormFieldPath("workerMemory"));
  CHECK(HasError(CheckFormAgainstCluster(form, ClusterLimits{}),
                 "spec.tfReplicaSpecs.Worker.replicas"));
}

TEST_CASE("a clone keeps the spec and drops server-set fields") {
  const json source = {{"apiVersion", "kubeflow.org/v1"},
                       {"kind", "TFJob"},
                       {"metadata",
                        {{"name", "mnist"},
                         {"namespace", "default"},
                         {"uid", "123"},
                         {"resourceVersion", "9"},
                         {"labels", {{"team", "a"}}}}},
                       {"spec", {{"tfReplicaSpecs", {{"Worker", {{"replicas", 2}}}}}}},
                       {"status", {{"conditions", json::array()}}}};
  const json copy = CloneTfJob(source, "mnist-2");
  CHECK(copy["metadata"]["name"] == "mnist-2");
  CHECK(copy["metadata"]["namespace"] == "default");
  CHECK(copy["metadata"]["labels"]["team"] == "a");
  CHECK(copy["metadata"]["annotations"]["taas.dev/cloned-from"] == "mnist");
  CHECK_FALSE(copy["metadata"].contains("uid"));
  CHECK_FALSE(copy["metadata"].contains("resourceVersion"));
  CHECK_FALSE(copy.contains("status"));
  CHECK(copy["spec"] == source["spec"]);
}

TEST_CASE("errors serialise as the API's error object") {
  const json out = ErrorsJson({{"metadata.name", "bad"}, {"spec.x", "worse"}});
  CHECK(out["error"] == "bad");
  CHECK(out["field"] == "metadata.name");
  CHECK(out["errors"].size() == 2);
}

}  // namespace
}  // namespace taas::ui_server
