#include "taas/kube/informer.h"

#include <doctest/doctest.h>

#include <set>
#include <thread>

#include "taas/kube_testing/test_server.h"

using taas::kube::Delta;
using taas::kube::DeltaType;
using taas::kube::ObjectKey;
using taas::kube::Store;
using taas::kube::StoreMode;

namespace {
nlohmann::json Pod(const std::string& name, const std::string& rv, const std::string& job = "j") {
  return {
      {"metadata",
       {{"name", name}, {"namespace", "ns"}, {"resourceVersion", rv}, {"labels", {{"job", job}}}}}};
}

constexpr StoreMode kModes[] = {StoreMode::kParsed, StoreMode::kPacked};

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
  for (StoreMode mode : kModes) {
    CAPTURE(static_cast<int>(mode));
    Store store(ByJob(), mode);
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
}

TEST_CASE("the index follows label changes") {
  for (StoreMode mode : kModes) {
    CAPTURE(static_cast<int>(mode));
    Store store(ByJob(), mode);
    store.Apply("ADDED", Pod("a", "1", "x"));
    store.Apply("MODIFIED", Pod("a", "2", "y"));
    CHECK(store.ByIndex("ns/x").empty());
    CHECK(store.ByIndex("ns/y").size() == 1);
  }
}

TEST_CASE("a relist reports what the watch missed") {
  for (StoreMode mode : kModes) {
    CAPTURE(static_cast<int>(mode));
    Store store(ByJob(), mode);
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
}

TEST_CASE("a packed store gives back the object it was given, a fresh copy on every read") {
  nlohmann::json pod = Pod("a", "1");
  pod["status"] = {{"phase", "Running"},
                   {"restartCount", 3},
                   {"exitCode", -2},
                   {"big", 18446744073709551615ULL},
                   {"ratio", 0.25},
                   {"ready", true},
                   {"none", nullptr},
                   {"message", "r\u00e9sum\u00e9 \"quoted\""},
                   {"list", {1, "two", {{"three", 3}}, nlohmann::json::array()}},
                   {"empty", nlohmann::json::object()}};
  Store store(ByJob(), StoreMode::kPacked);
  auto added = store.Apply("ADDED", pod);
  REQUIRE(added);
  CHECK(*added->object == pod);
  auto first = store.Get("ns/a");
  auto second = store.Get("ns/a");
  REQUIRE(first != nullptr);
  CHECK(*first == pod);
  CHECK(first.get() != second.get());
  REQUIRE(store.ByIndex("ns/j").size() == 1);
  CHECK(*store.ByIndex("ns/j")[0] == pod);
  REQUIRE(store.List().size() == 1);
  CHECK(*store.List()[0] == pod);

  nlohmann::json next = pod;
  next["metadata"]["resourceVersion"] = "2";
  auto updated = store.Apply("MODIFIED", next);
  REQUIRE(updated);
  CHECK(*updated->old_object == pod);
  auto gone = store.Replace({});
  REQUIRE(gone.size() == 1);
  CHECK(gone[0].type == DeltaType::kDeleted);
  CHECK(*gone[0].object == next);
}

namespace {

using taas::kube::testing::Chunk;
using taas::kube::testing::Response;
using taas::kube::testing::TestServer;

std::string ListBody(const std::vector<std::string>& names, const std::string& rv) {
  nlohmann::json list = {{"kind", "PodList"}, {"metadata", {{"resourceVersion", rv}}}};
  list["items"] = nlohmann::json::array();
  for (const auto& n : names) list["items"].push_back(Pod(n, rv));
  return list.dump();
}

std::string Event(const std::string& type, const nlohmann::json& object) {
  return nlohmann::json{{"type", type}, {"object", object}}.dump() + "\n";
}

const char* kChunkedOk = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

}  // namespace

TEST_CASE("the informer lists, watches from the list's version, and relists on 410 and drops") {
  std::atomic<int> lists{0};
  std::atomic<int> watches{0};
  TestServer server([&](const std::string& head) -> std::vector<std::string> {
    bool watch = head.find("watch=1") != std::string::npos;
    if (!watch) {
      int n = lists.fetch_add(1);
      if (n == 0) return {Response(200, ListBody({"a", "b"}, "10"))};
      if (n == 1) return {Response(200, ListBody({"b", "c"}, "20"))};
      return {Response(200, ListBody({"c"}, "30"))};
    }
    int w = watches.fetch_add(1);
    if (w == 0) {
      // Resumes from the list's version; a bookmark, then an expired-version error event.
      CHECK(head.find("resourceVersion=10") != std::string::npos);
      CHECK(head.find("allowWatchBookmarks=true") != std::string::npos);
      return {kChunkedOk, Chunk(Event("BOOKMARK", {{"metadata", {{"resourceVersion", "12"}}}})),
              Chunk(Event("ERROR", {{"kind", "Status"}, {"code", 410}, {"message", "too old"}})),
              Chunk(""), "CLOSE"};
    }
    if (w == 1) {
      CHECK(head.find("resourceVersion=20") != std::string::npos);
      // An event, then the connection drops mid-stream.
      return {kChunkedOk, Chunk(Event("ADDED", Pod("d", "21"))), "CLOSE"};
    }
    CHECK(head.find("resourceVersion=30") != std::string::npos);
    return {kChunkedOk, "SLEEP2000", "CLOSE"};
  });
  taas::kube::ClientConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(server.port());
  auto client = taas::kube::Client::Create(config);
  REQUIRE(client.ok());

  taas::kube::Informer::Options options;
  options.path = "/api/v1/pods";
  options.min_backoff = std::chrono::milliseconds(10);
  options.resync_period = std::chrono::seconds(0);
  std::FILE* devnull = std::fopen("/dev/null", "w");
  taas::kube::Informer informer(client->get(), options, taas::Logger(devnull));
  std::mutex mu;
  std::vector<std::pair<DeltaType, std::string>> seen;
  informer.AddHandler([&](const Delta& d) {
    std::lock_guard<std::mutex> lock(mu);
    seen.emplace_back(d.type, ObjectKey(*d.object));
  });
  informer.Start();
  REQUIRE(informer.WaitForSync(std::chrono::seconds(10)));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (informer.lists() < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  while (watches.load() < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  informer.Stop();
  std::fclose(devnull);

  CHECK(informer.lists() == 3);  // initial, after 410, after the dropped stream
  CHECK(informer.store().Size() == 1);
  CHECK(informer.store().Get("ns/c") != nullptr);
  std::lock_guard<std::mutex> lock(mu);
  std::vector<std::pair<DeltaType, std::string>> expected = {
      {DeltaType::kAdded, "ns/a"},   {DeltaType::kAdded, "ns/b"},    // list 1
      {DeltaType::kAdded, "ns/c"},   {DeltaType::kUpdated, "ns/b"},  // list 2 (order of Replace)
      {DeltaType::kDeleted, "ns/a"}, {DeltaType::kAdded, "ns/d"},    // watch event
      {DeltaType::kUpdated, "ns/c"}, {DeltaType::kDeleted, "ns/b"},  // list 3
      {DeltaType::kDeleted, "ns/d"},
  };
  std::multiset<std::pair<DeltaType, std::string>> got(seen.begin(), seen.end());
  std::multiset<std::pair<DeltaType, std::string>> want(expected.begin(), expected.end());
  CHECK(got == want);
  CHECK(seen.size() == expected.size());
}

TEST_CASE("StripManagedFields drops only metadata.managedFields") {
  nlohmann::json pod = Pod("a", "1");
  pod["metadata"]["managedFields"] = nlohmann::json::array({{{"manager", "kubectl"}}});
  taas::kube::StripManagedFields(pod);
  CHECK_FALSE(pod["metadata"].contains("managedFields"));
  CHECK(pod["metadata"]["name"] == "a");
  nlohmann::json empty = nlohmann::json::object();
  taas::kube::StripManagedFields(empty);
  CHECK(empty.empty());
}

TEST_CASE("ApplyWatchEvent: store changes, bookmarks, 410, and any JSON type tolerated") {
  Store store;
  std::string rv = "0";
  auto event = [](std::string type, nlohmann::json object) {
    return taas::kube::WatchEvent{std::move(type), std::move(object)};
  };
  auto added = taas::kube::ApplyWatchEvent(event("ADDED", Pod("a", "3")), store, nullptr, rv);
  REQUIRE(added.ok());
  REQUIRE(*added);
  CHECK((*added)->type == DeltaType::kAdded);
  CHECK(rv == "3");
  auto bookmark = taas::kube::ApplyWatchEvent(
      event("BOOKMARK", {{"metadata", {{"resourceVersion", "9"}}}}), store, nullptr, rv);
  REQUIRE(bookmark.ok());
  CHECK_FALSE(*bookmark);
  CHECK(rv == "9");
  auto gone = taas::kube::ApplyWatchEvent(
      event("ERROR", {{"kind", "Status"}, {"code", 410}, {"message", "too old"}}), store, nullptr,
      rv);
  CHECK(gone.status().code() == absl::StatusCode::kOutOfRange);
  auto other = taas::kube::ApplyWatchEvent(event("ERROR", {{"code", "x"}}), store, nullptr, rv);
  CHECK(other.status().code() == absl::StatusCode::kInternal);
  // Fields of unexpected types: nothing cached, nothing thrown, the resourceVersion kept.
  for (const nlohmann::json& odd :
       {nlohmann::json(7), nlohmann::json::array({1}), nlohmann::json{{"metadata", "x"}},
        nlohmann::json{{"metadata", {{"name", 5}, {"resourceVersion", 6}}}},
        nlohmann::json{{"metadata", {{"name", "b"}, {"namespace", nullptr}}}}}) {
    auto result = taas::kube::ApplyWatchEvent(event("MODIFIED", odd), store, nullptr, rv);
    CHECK(result.ok());
    CHECK(rv == "9");
  }
  CHECK(store.Get("ns/a") != nullptr);
}
