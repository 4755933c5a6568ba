// The base of a type that owns something no copy may share (a thread pool, a file mapping, a
// server, a tokenizer's compiled tables): copying it is a compile error.
//
//   class ThreadPool : NonCopyable { … };
#pragma once

namespace minfer {

class NonCopyable {
 public:
  NonCopyable(const NonCopyable&) = delete;
  NonCopyable& operator=(const NonCopyable&) = delete;

 protected:
  NonCopyable() = default;
  ~NonCopyable() = default;
};

}  // namespace minfer
