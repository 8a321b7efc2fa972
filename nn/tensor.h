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

// Grows a buffer only when its shape changes; hot loops call this once per (batch, length).
template <typename S>
inline void Resize(Mat<S>& m, Eigen::Index rows, Eigen::Index cols) {
  if (m.rows() != rows || m.cols() != cols) m.resize(rows, cols);
}

}  // namespace lexp
