// SPDX-License-Identifier: MIT
// The reference figures the bullet example checks simprof's zone times against: a zone tree with
// the semantics of Bullet's CProfileManager, driven by the same enter/leave callbacks as simprof's
// EngineZones and timed on Bullet's own btClock.
//
// Why not CProfileManager itself: Debian's libLinearMath (3.24) is built without BT_ENABLE_PROFILE,
// so btQuickprof.h defines BT_NO_PROFILE, CProfileManager/CProfileNode/CProfileIterator are neither
// declared nor in the library, and the default zone functions (btEnterProfileZoneDefault /
// btLeaveProfileZoneDefault) are empty. The tree below follows CProfileManager's documented rules,
// written here from them: one node per (parent, name pointer) — Start_Profile descends to the child
// of that name unless the current node already has it (recursion), Stop_Profile climbs back when
// the node's recursion count returns to 0 — with calls and total time per node, a frame counter
// and Reset() that keeps the tree and zeroes its figures. Like Bullet 3.x, each thread has its own
// tree (Bullet's Get_Iterator() shows the calling thread's); totals() adds the trees by path.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <LinearMath/btQuickprof.h>

namespace simprof::examples::bullet {

/// Per-zone totals over the frames since reset(), by path ("stepSimulation/solveConstraints").
struct ReferenceZone {
  std::int64_t calls = 0;
  std::int64_t nanoseconds = 0;
};

class ReferenceProfile {
 public:
  /// The zone `name` (a string Bullet keeps) begins on the calling thread.
  void enter(const char* name) noexcept {
    Tree& t = tree();
    if (name != t.current->name) t.current = t.current->child(name);
    Node* n = t.current;
    ++n->calls;
    if (n->recursion++ == 0) n->start = now();
  }
  /// The calling thread's innermost zone ends.
  void leave() noexcept {
    Tree& t = tree();
    Node* n = t.current;
    if (n->parent == nullptr) return;  // a leave with no zone open
    if (--n->recursion == 0) {
      n->total += now() - n->start;
      t.current = n->parent;
    }
  }
  /// Zeroes every figure and the frame count (the trees stay). Only between steps: no zone open.
  void reset() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& t : trees_) zero(t->root);
    frames_ = 0;
  }
  void count_frame() noexcept { ++frames_; }
  std::int64_t frames() const noexcept { return frames_; }
  /// Every thread's zones added by path. Only between steps.
  std::map<std::string, ReferenceZone> totals() const {
    std::map<std::string, ReferenceZone> out;
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& t : trees_) add(t->root, "", out);
    return out;
  }

 private:
  struct Node {
    const char* name = nullptr;
    Node* parent = nullptr;
    std::vector<std::unique_ptr<Node>> children;
    std::int64_t calls = 0, total = 0, start = 0;
    int recursion = 0;
    Node* child(const char* n) {
      for (auto& c : children)
        if (c->name == n) return c.get();  // pointer compare, as Bullet does
      children.push_back(std::make_unique<Node>());
      children.back()->name = n;
      children.back()->parent = this;
      return children.back().get();
    }
  };
  struct Tree {
    Node root;
    Node* current = &root;
  };
  Tree& tree() {
    thread_local Tree* mine = nullptr;
    thread_local const ReferenceProfile* owner = nullptr;
    if (mine == nullptr || owner != this) {  // first zone of this thread for this profile
      std::lock_guard<std::mutex> lock(mutex_);
      trees_.push_back(std::make_unique<Tree>());
      mine = trees_.back().get();
      owner = this;
    }
    return *mine;
  }
  std::int64_t now() noexcept { return static_cast<std::int64_t>(clock_.getTimeNanoseconds()); }
  static void zero(Node& n) {
    n.calls = 0;
    n.total = 0;
    for (auto& c : n.children) zero(*c);
  }
  static void add(const Node& n, const std::string& path,
                  std::map<std::string, ReferenceZone>& out) {
    for (const auto& c : n.children) {
      const std::string p = path.empty() ? std::string(c->name) : path + "/" + c->name;
      ReferenceZone& z = out[p];
      z.calls += c->calls;
      z.nanoseconds += c->total;
      add(*c, p, out);
    }
  }

  // Bullet's clock, the one CProfileManager reads: gettimeofday in Debian's build (1 us steps);
  // getTimeNanoseconds() only reads the clock's start time, so threads share it.
  btClock clock_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Tree>> trees_;
  std::int64_t frames_ = 0;
};

}  // namespace simprof::examples::bullet
