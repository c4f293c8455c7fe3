#include "taas/kube/informer.h"

#include <doctest/doctest.h>

using taas::kube::Delta;
using taas::kube::DeltaType;
using taas::kube::ObjectKey;
using taas::kube::Store;

namespace {
nlohmann::json Pod(const std::string& name, const std::string& rv, const std::string& job = "j") {
  return {
      {"metadata",
       {{"name", name}, {"namespace", "ns"}, {"resourceVersion", rv}, {"labels", {{"job", job}}}}}};
}

Store::IndexFunc ByJob() {
  return [](const nlohmann::json& o) -> std::vector<std::string> {
    return {o["metadata"]["namespace"].get<std::string>() + "/" +
            o["metadata"]["labels"]["job"].get<std::string>()};
  };
}
}  // namespace

TEST_CASE("ObjectKey is namespace/name, or name for cluster-scoped objects") {
  CHECK(ObjectKey(Pod("a", "1")) == "ns/a");
  CHECK(ObjectKey({{"metadata", {{"name", "node-0"}}}}) == "node-0");
  CHECK(ObjectKey(nlohmann::json::object()) == "");
}

TEST_CASE("watch events add, update and delete cached objects") {
  Store store(ByJob());
  auto added = store.Apply("ADDED", Pod("a", "1"));
  REQUIRE(added);
  CHECK(added->type == DeltaType::kAdded);
  CHECK(store.Size() == 1);

  auto updated = store.Apply("MODIFIED", Pod("a", "2"));
  REQUIRE(updated);
  CHECK(updated->type == DeltaType::kUpdated);
  CHECK((*updated->old_object)["metadata"]["resourceVersion"] == "1");
  CHECK((*store.Get("ns/a"))["metadata"]["resourceVersion"] == "2");

  // A MODIFIED for an unknown key is an add (the watch may start after a relist).
  auto b = store.Apply("MODIFIED", Pod("b", "3"));
  REQUIRE(b);
  CHECK(b->type == DeltaType::kAdded);
  CHECK(store.ByIndex("ns/j").size() == 2);

  auto deleted = store.Apply("DELETED", Pod("a", "4"));
  REQUIRE(deleted);
  CHECK(deleted->type == DeltaType::kDeleted);
  CHECK(store.Get("ns/a") == nullptr);
  CHECK(store.ByIndex("ns/j").size() == 1);
  CHECK_FALSE(store.Apply("BOOKMARK", Pod("c", "5")).has_value());
}

TEST_CASE("the index follows label changes") {
  Store store(ByJob());
  store.Apply("ADDED", Pod("a", "1", "x"));
  store.Apply("MODIFIED", Pod("a", "2", "y"));
  CHECK(store.ByIndex("ns/x").empty());
  CHECK(store.ByIndex("ns/y").size() == 1);
}

TEST_CASE("a relist reports what the watch missed") {
  Store store(ByJob());
  store.Apply("ADDED", Pod("keep", "1"));
  store.Apply("ADDED", Pod("change", "1"));
  store.Apply("ADDED", Pod("gone", "1"));
  auto deltas = store.Replace({Pod("keep", "1"), Pod("change", "7"), Pod("new", "8")});
  std::map<std::string, DeltaType> by_key;
  for (const Delta& d : deltas) by_key[ObjectKey(*d.object)] = d.type;
  CHECK(by_key.size() == 3);
  CHECK(by_key["ns/change"] == DeltaType::kUpdated);
  CHECK(by_key["ns/new"] == DeltaType::kAdded);
  CHECK(by_key["ns/gone"] == DeltaType::kDeleted);
  CHECK(store.Size() == 3);
  CHECK(store.Get("ns/gone") == nullptr);
  CHECK(store.ByIndex("ns/j").size() == 3);
  // Relisting the same content again changes nothing.
  CHECK(store.Replace({Pod("keep", "1"), Pod("change", "7"), Pod("new", "8")}).empty());
}
