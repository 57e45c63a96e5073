// InlineVector<T, N>: a vector of trivially copyable T that keeps up to N
// elements inside itself and goes to the heap only beyond them.  A CFG has a
// few hundred thousand blocks, nearly all with one or two successors,
// predecessors and leaving edges: as std::vector each list was a malloc of
// its own (a third of building the CFG).  With N chosen so that the inline
// elements take no more room than the heap pointer's share, the object is
// the size of a std::vector (24 bytes for N * sizeof(T) <= 16).
//
// The read API is std::vector's (begin/end, size, empty, operator[],
// front/back, data); growing is push_back/emplace_back, and clear().
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <new>
#include <type_traits>
#include <utility>

namespace atomx {

template <class T, uint32_t N>
class InlineVector {
  static_assert(std::is_trivially_copyable_v<T>, "InlineVector copies its elements as bytes");
  static_assert(N > 0, "InlineVector needs room for one element inside");

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  InlineVector() = default;
  InlineVector(std::initializer_list<T> items) { append(items.begin(), uint32_t(items.size())); }
  InlineVector(const InlineVector& other) { append(other.data(), other.size_); }
  InlineVector(InlineVector&& other) noexcept { take(other); }
  InlineVector& operator=(const InlineVector& other) {
    if (this != &other) {
      size_ = 0;
      append(other.data(), other.size_);
    }
    return *this;
  }
  InlineVector& operator=(InlineVector&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  ~InlineVector() { release(); }

  T* data() { return onHeap() ? heap_ : inlineData(); }
  const T* data() const { return onHeap() ? heap_ : inlineData(); }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  bool empty() const { return size_ == 0; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& front() { return data()[0]; }
  const T& front() const { return data()[0]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }

  void push_back(const T& value) {
    const T copy = value;  // `value` may be one of ours, and growing moves it
    if (size_ == capacity_) grow(capacity_ * 2);
    data()[size_++] = copy;
  }
  template <class... Args>
  T& emplace_back(Args&&... args) {
    push_back(T{std::forward<Args>(args)...});
    return back();
  }
  void clear() { size_ = 0; }

  friend bool operator==(const InlineVector& a, const InlineVector& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  bool onHeap() const { return capacity_ > N; }
  T* inlineData() { return std::launder(reinterpret_cast<T*>(inline_)); }
  const T* inlineData() const { return std::launder(reinterpret_cast<const T*>(inline_)); }

  void append(const T* items, uint32_t n) {
    if (size_ + n > capacity_) grow(size_ + n);
    if (n) std::memcpy(static_cast<void*>(data() + size_), items, sizeof(T) * n);
    size_ += n;
  }
  void grow(uint32_t capacity) {
    T* fresh = static_cast<T*>(::operator new(sizeof(T) * capacity));
    if (size_) std::memcpy(static_cast<void*>(fresh), data(), sizeof(T) * size_);
    release();
    heap_ = fresh;
    capacity_ = capacity;
  }
  void release() {
    if (onHeap()) ::operator delete(heap_);
    capacity_ = N;
  }
  // Takes other's elements (its heap block, or a copy of its inline ones)
  // and leaves it empty.
  void take(InlineVector& other) {
    size_ = other.size_;
    capacity_ = other.capacity_;
    if (other.onHeap()) heap_ = other.heap_;
    else if (size_) std::memcpy(inline_, other.inline_, sizeof(T) * size_);
    other.size_ = 0;
    other.capacity_ = N;
  }

  uint32_t size_ = 0;
  uint32_t capacity_ = N;
  union {
    T* heap_;
    alignas(T) unsigned char inline_[sizeof(T) * N];
  };
};

}  // namespace atomx
