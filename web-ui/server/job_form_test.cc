#include "taas/ui_server/job_form.h"

#include <doctest/doctest.h>

#include "taas/tfjob/serialization.h"
#include "taas/tfjob/validation.h"

namespace taas::ui_server {
namespace {

using nlohmann::json;
using tfjob::ReplicaType;

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

std::vector<FieldError> Parse(const json& body) { return ReadJobForm(body, "default").errors; }

// The job of a valid form, as the common serialiser writes it.
json Built(const json& body) {
  JobFormResult form = ReadJobForm(body, "default");
  REQUIRE(form.errors.empty());
  return tfjob::TFJobToJson(form.job);
}

bool HasError(const std::vector<FieldError>& errors, const std::string& field) {
  for (const auto& e : errors) {
    if (e.field == field) return true;
  }
  return false;
}

TEST_CASE("a valid form becomes a typed TFJob, serialised by the TFJob rules' serialiser") {
  const json job = Built(ValidForm());
  CHECK(job["apiVersion"] == "kubeflow.org/v1");
  CHECK(job["kind"] == "TFJob");
  CHECK(job["metadata"]["name"] == "mnist");
  CHECK(job["metadata"]["namespace"] == "default");
  CHECK(job["spec"]["runPolicy"]["backoffLimit"] == 5);
  CHECK(job["spec"]["runPolicy"]["cleanPodPolicy"] == "None");  // logs stay readable
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
  CHECK(container["env"][1] == json{{"name", "TAAS_METRICS_PORT"}, {"value", "9090"}});
  bool tfjob_port = false;
  for (const json& port : container["ports"]) {
    tfjob_port |= port == json{{"name", "tfjob-port"}, {"containerPort", 2222}};
  }
  CHECK(tfjob_port);  // the TFJob rules' default
  const json& ps = job["spec"]["tfReplicaSpecs"]["PS"]["template"]["spec"]["containers"][0];
  CHECK_FALSE(ps["resources"]["limits"].contains("nvidia.com/gpu"));
  CHECK(ps["resources"]["requests"]["cpu"] == "1");
  CHECK_FALSE(job["spec"]["tfReplicaSpecs"].contains("Chief"));
  CHECK(tfjob::LoadTFJob(job).ok());
}

TEST_CASE("a chief runs like a worker, GPUs included; an evaluator needs no GPU") {
  json body = ValidForm();
  body["chief"] = true;
  body["evaluator"] = true;
  const json specs = Built(body)["spec"]["tfReplicaSpecs"];
  const json& chief = specs["Chief"]["template"]["spec"]["containers"][0];
  CHECK(specs["Chief"]["replicas"] == 1);
  CHECK(chief["resources"]["limits"]["nvidia.com/gpu"] == 2);
  CHECK(chief["resources"]["requests"]["cpu"] == "4");
  CHECK(chief["image"] == "registry.local:5000/taas/trainer:1.0");
  const json& evaluator = specs["Evaluator"]["template"]["spec"]["containers"][0];
  CHECK_FALSE(evaluator["resources"]["limits"].contains("nvidia.com/gpu"));
  CHECK(evaluator["resources"]["requests"]["memory"] == "8Gi");
  CHECK(specs["Evaluator"]["restartPolicy"] == "ExitCode");
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

  json absent = ValidForm();
  absent.erase("image");
  const std::vector<FieldError> errors = Parse(absent);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].message == "image is required");
}

TEST_CASE("each error carries the form key of its input, from the one table") {
  json body = ValidForm();
  body["workerReplicas"] = -1;
  body["name"] = "1mnist";  // the TFJob rules' verdict, in the form's words
  body["hostNetwork"] = true;
  const std::vector<FieldError> errors = Parse(body);
  REQUIRE(errors.size() == 3);
  CHECK(errors[0].field == "hostNetwork");
  CHECK_FALSE(errors[0].form_key.has_value());  // no input to place it at
  CHECK(errors[1].form_key == "workerReplicas");
  CHECK(errors[2].field == "metadata.name");
  CHECK(errors[2].form_key == "name");
  CHECK(errors[2].message.rfind("name must ", 0) == 0);
  // Every key's own field belongs to its input.
  for (const FormKeyType& key : FormKeyTypes()) {
    CAPTURE(key.field);
    CHECK(FormKeyOf(key.field) == std::string(key.key));
  }
}

TEST_CASE("errors from our rules and the API server land on the right input") {
  const std::string c = "spec.tfReplicaSpecs.Worker.template.spec.containers[0]";
  CHECK(FormKeyOf("metadata.name") == "name");
  CHECK(FormKeyOf("metadata.namespace") == "namespace");
  CHECK(FormKeyOf("spec.tfReplicaSpecs.Worker.replicas") == "workerReplicas");
  CHECK(FormKeyOf("spec.tfReplicaSpecs.PS.replicas") == "psReplicas");
  CHECK(FormKeyOf(c + ".resources.limits[nvidia.com/gpu]") == "gpusPerWorker");
  CHECK(FormKeyOf(c + ".resources.requests.memory") == "workerMemory");
  CHECK(FormKeyOf("spec.tfReplicaSpecs.PS.template.spec.containers[0].resources.requests.cpu") ==
        "psCpu");
  CHECK(FormKeyOf("spec.tfReplicaSpecs.PS.template.spec.containers[0].image") == "image");
  CHECK(FormKeyOf(c + ".args[2]") == "args");
  CHECK(FormKeyOf(c + ".env[TF_SYNC]") == "mode");
  CHECK(FormKeyOf("spec.runPolicy.backoffLimit") == "backoffLimit");
  CHECK(FormKeyOf("spec.tfReplicaSpecs.Worker.restartPolicy") == "restartPolicy");
  CHECK(FormKeyOf("spec.successPolicy") == std::nullopt);
  CHECK(FormKeyOf("strategy") == "strategy");
  // Kubeflow's webhook writes replica types as keys; a chief's own fields are the chief's.
  CHECK(FormKeyOf("spec.tfReplicaSpecs[Chief].template.spec.containers[0].image") == "image");
  CHECK(FormKeyOf("spec.tfReplicaSpecs[Chief].replicas") == "chief");
  CHECK(FormKeyOf("spec.tfReplicaSpecs.Evaluator.template.spec.containers[0].resources.limits."
                  "cpu") == "workerCpu");
  CHECK(FormKeyOf("") == std::nullopt);
  CHECK(FormKeyOf(std::string(5000, '[')) == std::nullopt);
  CHECK(FormKeyOf("spec.tfReplicaSpecs[Worker") == std::nullopt);
}

TEST_CASE("a priority class goes to every replica's pods") {
  json body = ValidForm();
  body["chief"] = true;
  body["priorityClassName"] = "team-a.high";
  const json specs = Built(body)["spec"]["tfReplicaSpecs"];
  for (const auto& spec : specs.items()) {
    CAPTURE(spec.key());
    CHECK(spec.value()["template"]["spec"]["priorityClassName"] == "team-a.high");
  }
  CHECK_FALSE(Built(ValidForm())["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"].contains(
      "priorityClassName"));
  body["priorityClassName"] = "High Priority";
  const std::vector<FieldError> errors = Parse(body);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].form_key == "priorityClassName");
  CHECK(FormKeyOf("spec.tfReplicaSpecs[PS].template.spec.priorityClassName") ==
        "priorityClassName");
}

TEST_CASE("a data claim is mounted read-only in the replicas that read data, not the PS's") {
  json body = ValidForm();
  body["chief"] = true;
  body["evaluator"] = true;
  body["dataClaim"] = "fashion-mnist-tfrecord";
  body["dataMountPath"] = "/data/fashion-mnist";
  const json specs = Built(body)["spec"]["tfReplicaSpecs"];
  for (const char* type : {"Chief", "Worker", "Evaluator"}) {
    CAPTURE(type);
    const json& pod = specs[type]["template"]["spec"];
    REQUIRE(pod["volumes"].size() == 1);
    CHECK(pod["volumes"][0] ==
          json({{"name", "data"},
                {"persistentVolumeClaim",
                 {{"claimName", "fashion-mnist-tfrecord"}, {"readOnly", true}}}}));
    CHECK(pod["containers"][0]["volumeMounts"] ==
          json::array(
              {{{"name", "data"}, {"mountPath", "/data/fashion-mnist"}, {"readOnly", true}}}));
  }
  CHECK_FALSE(specs["PS"]["template"]["spec"].contains("volumes"));
  CHECK_FALSE(specs["PS"]["template"]["spec"]["containers"][0].contains("volumeMounts"));
  // Without a claim nothing is mounted, whatever the path says.
  body.erase("dataClaim");
  const json plain = Built(body)["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"];
  CHECK_FALSE(plain.contains("volumes"));
  CHECK_FALSE(plain["containers"][0].contains("volumeMounts"));
  // The default mount path is /data.
  body["dataClaim"] = "data.team-a";
  body.erase("dataMountPath");
  CHECK(Built(body)["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
                   ["volumeMounts"][0]["mountPath"] == "/data");
}

TEST_CASE("a data claim's name and mount path are checked, whatever JSON they hold") {
  const std::string claim =
      "spec.tfReplicaSpecs.Worker.template.spec.volumes[0].persistentVolumeClaim.claimName";
  const std::string mount =
      "spec.tfReplicaSpecs.Worker.template.spec.containers[0].volumeMounts[0].mountPath";
  auto errors_with = [](const char* key, json value) {
    json form = ValidForm();
    form["dataClaim"] = "data";
    form[key] = std::move(value);
    return Parse(form);
  };
  for (const json& bad :
       {json("Data"), json("my_claim"), json("-data"), json(std::string(254, 'a')), json(7),
        json(true), json::array({"data"}), json::object()}) {
    CAPTURE(bad.dump());
    const std::vector<FieldError> errors = errors_with("dataClaim", bad);
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].field == claim);
    CHECK(errors[0].form_key == "dataClaim");
  }
  CHECK(errors_with("dataClaim", "Data")[0].message ==
        "dataClaim \"Data\" is not a PersistentVolumeClaim name (a DNS-1123 subdomain: "
        "lower-case letters, digits, '-' and '.')");
  for (const json& bad : {json("data"), json(""), json("/"), json("/data/../etc"),
                          json("/data/./x"), json("/data//x"), json("/data\n"),
                          json("/var/run/secrets/taas/job"), json("/var/run/secrets/taas/job/data"),
                          json("/var/run"), json(1), json::array({"/data"}), json::object()}) {
    CAPTURE(bad.dump());
    const std::vector<FieldError> errors = errors_with("dataMountPath", bad);
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].field == mount);
    CHECK(errors[0].form_key == "dataMountPath");
  }
  CHECK(errors_with("dataMountPath", "data")[0].message ==
        "dataMountPath \"data\" must be an absolute path (it starts with /)");
  CHECK(errors_with("dataMountPath", "/var/run/secrets/taas")[0].message ==
        "dataMountPath \"/var/run/secrets/taas\" would overlap the job secret's mount, "
        "/var/run/secrets/taas/job");
  for (const char* good : {"/data", "/mnt/fashion-mnist", "/data/v2.1", "/data/"}) {
    CAPTURE(good);
    CHECK(errors_with("dataMountPath", good).empty());
  }
  // The API server's errors about the volumes and mounts land on these inputs.
  CHECK(FormKeyOf("spec.tfReplicaSpecs[Evaluator].template.spec.volumes[0].persistentVolumeClaim."
                  "claimName") == "dataClaim");
  CHECK(FormKeyOf("spec.tfReplicaSpecs[Chief].template.spec.containers[0].volumeMounts[0]."
                  "mountPath") == "dataMountPath");
}

TEST_CASE("strategy collective builds a job of workers without PS replicas or TF_SYNC") {
  json body = ValidForm();
  for (const char* ps_field : {"psReplicas", "psCpu", "psMemory", "mode"}) body.erase(ps_field);
  body["strategy"] = "collective";
  body["evaluator"] = true;
  const json job = Built(body);
  const json& specs = job["spec"]["tfReplicaSpecs"];
  CHECK_FALSE(specs.contains("PS"));
  CHECK(specs["Worker"]["replicas"] == 3);
  CHECK(specs.contains("Evaluator"));
  const json& container = specs["Worker"]["template"]["spec"]["containers"][0];
  CHECK(container["resources"]["limits"]["nvidia.com/gpu"] == 2);
  for (const json& env : container["env"]) CHECK(env["name"] != "TF_SYNC");
  CHECK(tfjob::LoadTFJob(job).ok());

  // PS fields that say nothing (0, or the sync mode all-reduce has anyway) are fine.
  body["psReplicas"] = 0;
  body["mode"] = "sync";
  CHECK(Parse(body).empty());
  // The default and the explicit parameter-server strategy keep today's job.
  body = ValidForm();
  body["strategy"] = "parameter_server";
  CHECK(Built(body)["spec"]["tfReplicaSpecs"].contains("PS"));
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
  json body = ValidForm();
  body["name"] = "1mnist";  // a DNS-1123 label, but TFJob names must start with a letter
  CHECK(HasError(Parse(body), "metadata.name"));
}

TEST_CASE("requests no node can hold are refused before they wait forever") {
  auto job = [](int gpus, int workers, const char* memory) {
    json body = ValidForm();
    body["gpusPerWorker"] = gpus;
    body["workerReplicas"] = workers;
    body["workerMemory"] = memory;
    return ReadJobForm(body, "default").job;
  };
  ClusterLimits limits{32, 256.0 * (1 << 30), 8, 16, 2};
  CHECK(CheckJobAgainstCluster(job(2, 3, "8Gi"), limits).empty());
  auto errors = CheckJobAgainstCluster(job(16, 3, "8Gi"), limits);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].form_key == "gpusPerWorker");
  CHECK(errors[0].field ==
        "spec.tfReplicaSpecs.Worker.template.spec.containers[0].resources.limits[nvidia.com/gpu]");
  CHECK(errors[0].message.find("largest node has 8") != std::string::npos);
  errors = CheckJobAgainstCluster(job(8, 3, "8Gi"), limits);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].field == "spec.tfReplicaSpecs.Worker.replicas");
  errors = CheckJobAgainstCluster(job(8, 1, "512Gi"), limits);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].form_key == "workerMemory");
  CHECK(HasError(CheckJobAgainstCluster(job(8, 1, "512Gi"), ClusterLimits{}),
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
  const json out = schema::ToJson(
      ErrorsAnswer({FieldErrorAt("metadata.name", "bad"), FieldErrorAt("spec.x", "worse")}));
  CHECK(out["error"] == "bad");
  CHECK(out["field"] == "metadata.name");
  CHECK(out["formKey"] == "name");
  CHECK(out["errors"].size() == 2);
  CHECK(out["errors"][0]["formKey"] == "name");
  CHECK_FALSE(out["errors"][1].contains("formKey"));
}

}  // namespace
}  // namespace taas::ui_server
