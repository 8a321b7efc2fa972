// The only file that spells Eigen's row-major matrix types. Every tensor in lexp is a row-major matrix
// whose rows are tokens or (token, head) pairs.
//
// Shape glossary used in comments: B batch, T sequence length, C model width, H heads, D head width
// (C = H*D), F MLP width, V vocabulary, L layers, N = B*T rows.
#pragma once

#include <Eigen/Core>

namespace lexp {

template <typename S>
using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename S>
using Vec = Eigen::Matrix<S, Eigen::Dynamic, 1>;
template <typename S>
using RowVec = Eigen::Matrix<S, 1, Eigen::Dynamic>;
template <typename S>
using MatMap = Eigen::Map<Mat<S>>;
template <typename S>
using ConstMatMap = Eigen::Map<const Mat<S>>;
template <typename S>
using StridedMap = Eigen::Map<Mat<S>, 0, Eigen::OuterStride<>>;
template <typename S>
using ConstStridedMap = Eigen::Map<const Mat<S>, 0, Eigen::OuterStride<>>;

using MatF = Mat<float>;
using MatD = Mat<double>;

// Grows a buffer only when its shape changes; hot loops call this once per (batch, length). The old
// storage is released before the new one is requested: Eigen 3.4's resize frees the old block and
// keeps its pointer when the new allocation throws std::bad_alloc, so the destructor would free it
// a second time. Released first, a failed allocation leaves an empty, consistent matrix.
template <typename S>
inline void Resize(Mat<S>& m, Eigen::Index rows, Eigen::Index cols) {
  if (m.rows() == rows && m.cols() == cols) return;
  m.resize(0, 0);
  m.resize(rows, cols);
}
template <typename S>
inline void Resize(Vec<S>& v, Eigen::Index n) {
  if (v.size() == n) return;
  v.resize(0);
  v.resize(n);
}
// Resize, then zero.
template <typename S>
inline void ResizeZero(Mat<S>& m, Eigen::Index rows, Eigen::Index cols) {
  Resize(m, rows, cols);
  m.setZero();
}

}  // namespace lexp
