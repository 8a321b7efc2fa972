// The packet kernels (nn/ops/packet_map.h) of GELU and of the softmax: every length (whole packets
// and a masked or padded tail), every start alignment, in place or not, gives the closed form to
// float rounding and the same bits wherever the range starts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "nn/ops/attention_core.h"
#include "nn/ops/gelu.h"

namespace lexp {
namespace {

std::vector<float> Values(long n, unsigned seed) {
  std::vector<float> v(n);
  for (long i = 0; i < n; ++i) v[i] = std::sin(0.37f * (i + 1) * (seed + 1)) * 4.0f;
  return v;
}

TEST(PacketMap, GeluAndItsSlopeMatchTheClosedFormAtEveryLengthAndAlignment) {
  for (long n = 1; n <= 41; ++n) {
    for (long offset = 0; offset < 3; ++offset) {
      SCOPED_TRACE("n " + std::to_string(n) + ", offset " + std::to_string(offset));
      std::vector<float> x(offset), y(n + offset + 4, -7.0f), s(n + offset + 4, -7.0f);
      const std::vector<float> v = Values(n, 1);
      x.insert(x.end(), v.begin(), v.end());
      GeluValues(x.data() + offset, n, y.data() + offset, s.data() + offset);
      for (long i = 0; i < n; ++i) {
        const double xi = v[i];
        const double cdf = 0.5 * (1 + std::erf(xi / std::sqrt(2.0)));
        const double slope = cdf + xi * std::exp(-0.5 * xi * xi) / std::sqrt(2 * M_PI);
        EXPECT_NEAR(y[offset + i], xi * cdf, 1e-5 * (1 + std::abs(xi))) << i;
        EXPECT_NEAR(s[offset + i], slope, 1e-5) << i;
      }
      for (long i = 0; i < offset; ++i) EXPECT_EQ(y[i], -7.0f) << "written before the range";
      for (long i = n + offset; i < n + offset + 4; ++i) {
        EXPECT_EQ(y[i], -7.0f) << "written after the range";
        EXPECT_EQ(s[i], -7.0f) << "written after the range";
      }
      // The same values at offset 0: the same bits (no scalar head or tail).
      std::vector<float> y0(n), s0(n);
      GeluValues(v.data(), n, y0.data(), s0.data());
      for (long i = 0; i < n; ++i) {
        EXPECT_EQ(y0[i], y[offset + i]);
        EXPECT_EQ(s0[i], s[offset + i]);
      }
      // Value only, in place; slope only.
      std::vector<float> in_place = v, slope_only(n);
      GeluValues(in_place.data(), n, in_place.data(), static_cast<float*>(nullptr));
      GeluValues(v.data(), n, static_cast<float*>(nullptr), slope_only.data());
      for (long i = 0; i < n; ++i) {
        EXPECT_EQ(in_place[i], y0[i]);
        EXPECT_EQ(slope_only[i], s0[i]);
      }
    }
  }
}

TEST(PacketMap, ShiftedExpMatchesStdExpAndKeepsItsBitsAtAnyStart) {
  for (long n = 1; n <= 41; ++n) {
    const std::vector<float> v = Values(n, 2);
    std::vector<float> a = v;
    attention_detail::ExpShiftedInPlace(a.data(), n, 1.5f);
    std::vector<float> shifted(n + 9, 0.0f);
    std::copy(v.begin(), v.end(), shifted.begin() + 5);
    attention_detail::ExpShiftedInPlace(shifted.data() + 5, n, 1.5f);
    for (long i = 0; i < n; ++i) {
      const double want = std::exp(double(v[i] - 1.5f));  // the shift rounded to float, as the kernel's
      EXPECT_NEAR(a[i], want, 3e-7 * want);                // within 2.5 float ulps
      EXPECT_EQ(a[i], shifted[5 + i]) << "n " << n << ", i " << i;
    }
    for (int i = 0; i < 5; ++i) EXPECT_EQ(shifted[i], 0.0f) << "written before the range";
    for (long i = n + 5; i < n + 9; ++i) EXPECT_EQ(shifted[i], 0.0f) << "written after the range";
  }
}

// One causal query's softmax row (SoftmaxVisibleRow: on AVX packets, max, exponentials with their
// sum and division in packet passes, the last packet under a lane mask): every visible length
// (whole packets and every tail), every start of the block, against a double softmax; the keys
// the query does not see are exactly 0 and nothing outside the block is written.
TEST(PacketMap, SoftmaxRowMatchesADoubleSoftmaxAtEveryLengthAndStart) {
  const AttentionPattern causal(true);
  const int T = 80;
  for (int i = 0; i < 70; ++i) {
    for (int jb : {0, 1, 3}) {
      if (jb > i) continue;
      const int je = std::min(T, i + 9);  // keys past the query: masked
      SCOPED_TRACE("query " + std::to_string(i) + ", block [" + std::to_string(jb) + ", " +
                   std::to_string(je) + ")");
      const std::vector<float> v = Values(je - jb, 3);
      std::vector<float> buf(static_cast<size_t>(je - jb) + 8, -7.0f);
      std::copy(v.begin(), v.end(), buf.begin() + 4);
      float lse = 0;
      attention_detail::SoftmaxVisibleRow(causal, i, T, jb, je, buf.data() + 4, &lse);
      double mx = -1e300, sum = 0;
      for (int j = jb; j <= i; ++j) mx = std::max(mx, double(v[j - jb]));
      for (int j = jb; j <= i; ++j) sum += std::exp(double(v[j - jb]) - mx);
      for (int j = jb; j < je; ++j) {
        const double want = j <= i ? std::exp(double(v[j - jb]) - mx) / sum : 0.0;
        if (j > i)
          EXPECT_EQ(buf[4 + j - jb], 0.0f) << "masked key " << j;
        else
          EXPECT_NEAR(buf[4 + j - jb], want, 1e-6 * want + 1e-9) << "key " << j;
      }
      EXPECT_NEAR(lse, mx + std::log(sum), 1e-5);
      for (int k = 0; k < 4; ++k) EXPECT_EQ(buf[k], -7.0f) << "written before the block";
      for (size_t k = 4 + (je - jb); k < buf.size(); ++k)
        EXPECT_EQ(buf[k], -7.0f) << "written after the block";
    }
  }
}

// A causal window of `width` keys: a contiguous pattern whose rows start at different keys.
class WindowPattern : public AttentionPattern {
 public:
  explicit WindowPattern(int width) : AttentionPattern(true), width_(width) {}
  void KeyBounds(int i, int, int* b, int* e) const override {
    *b = std::max(0, i + 1 - width_);
    *e = i + 1;
  }

 private:
  int width_;
};

// The softmax of a block of rows, pass by pass over the rows (SoftmaxVisibleRows), has the bits of
// the row-by-row softmax: blocks of a causal, a bidirectional and a windowed pattern (whose rows'
// visible keys start after the block's first key), every row's log-sum-exp, a row that overflowed
// (every visible logit -inf) among finite ones, and nothing written between or after the rows.
TEST(PacketMap, SoftmaxOfABlockHasTheBitsOfTheRowByRowSoftmax) {
  const float inf = std::numeric_limits<float>::infinity();
  const int T = 80;
  const long ld = T + 5;
  const auto bits = [](const std::vector<float>& v) {
    std::vector<std::uint32_t> b(v.size());
    std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
    return b;
  };
  const AttentionPattern causal(true), bidirectional(false);
  const WindowPattern window(7);
  for (const AttentionPattern* pattern_ptr : {&causal, &bidirectional,
                                              static_cast<const AttentionPattern*>(&window)}) {
    const AttentionPattern& pattern = *pattern_ptr;
    for (int i0 : {0, 1, 17, 32, 48}) {
      for (int n : {1, 5, 32}) {
        for (int overflow_row : {-1, 0, n - 1}) {
          int jb, je;
          attention_detail::BlockKeyBounds(pattern, i0, i0 + n, T, &jb, &je);
          SCOPED_TRACE(pattern.Name() + (&pattern == &window ? " window" : "") + ", rows [" +
                       std::to_string(i0) + ", " + std::to_string(i0 + n) + "), overflow row " +
                       std::to_string(overflow_row));
          std::vector<float> block(static_cast<size_t>(n) * ld, -7.0f);
          for (int r = 0; r < n; ++r) {
            const std::vector<float> v = Values(je - jb, 10 + r);
            std::copy(v.begin(), v.end(), block.begin() + r * ld);
            if (r == overflow_row) std::fill_n(block.begin() + r * ld, je - jb, -inf);
          }
          std::vector<float> by_row = block, lse_rows(n, 3.0f), lse_block(n, 3.0f);
          for (int r = 0; r < n; ++r)
            attention_detail::SoftmaxVisibleRow(pattern, i0 + r, T, jb, je,
                                                by_row.data() + r * ld, &lse_rows[r]);
          attention_detail::SoftmaxVisibleRows(pattern, i0, n, T, jb, je, block.data(), ld,
                                               lse_block.data());
          EXPECT_EQ(bits(block), bits(by_row));
          EXPECT_EQ(bits(lse_block), bits(lse_rows));
          for (int r = 0; r < n; ++r)
            for (long j = je - jb; j < ld; ++j)
              ASSERT_EQ(block[r * ld + j], -7.0f) << "written after row " << r << "'s block";
        }
      }
    }
  }
}

// The softmax backward's row pass (SpanDot, SpanSoftmaxGrad): every length and start against the
// double formula d = (p (d - p.d)) scale; nothing written outside the span.
TEST(PacketMap, SoftmaxGradRowMatchesTheFormulaAtEveryLengthAndStart) {
#if !defined(EIGEN_VECTORIZE_AVX)
  GTEST_SKIP() << "the span kernels need packets with lane masks (AVX or AVX-512 float)";
#else
  for (long n = 1; n <= 70; ++n) {
    for (long offset : {0, 1, 5}) {
      SCOPED_TRACE("n " + std::to_string(n) + ", offset " + std::to_string(offset));
      const std::vector<float> p = Values(n, 6), d0 = Values(n, 7);
      std::vector<float> pb(n + offset + 20, 9.0f), db(n + offset + 20, -7.0f);
      std::copy(p.begin(), p.end(), pb.begin() + offset);
      std::copy(d0.begin(), d0.end(), db.begin() + offset);
      const PacketSpan<float> span(n);
      const float dot = SpanDot(db.data() + offset, pb.data() + offset, span);
      double want_dot = 0;
      for (long i = 0; i < n; ++i) want_dot += double(p[i]) * d0[i];
      EXPECT_NEAR(dot, want_dot, 1e-5 * (1 + std::abs(want_dot)));
      SpanSoftmaxGrad(db.data() + offset, pb.data() + offset, span, dot, 0.25f);
      for (long i = 0; i < n; ++i) {
        const double want = double(p[i]) * (double(d0[i]) - dot) * 0.25;
        EXPECT_NEAR(db[offset + i], want, 1e-6 * (1 + std::abs(want))) << i;
      }
      for (long i = 0; i < offset; ++i) EXPECT_EQ(db[i], -7.0f) << "written before the span";
      for (long i = n + offset; i < static_cast<long>(db.size()); ++i)
        EXPECT_EQ(db[i], -7.0f) << "written after the span";
    }
  }
#endif
}

// A row whose visible logits are all -inf (overflowed) or hold a NaN (a diverging run) passes
// the NaN on, so the loss reports it; an -inf beside finite logits is a probability of 0 (below
// 1e-37: Eigen's AVX2 exp clamps its input at -88.7, so exp(-inf) is a denormal there).
TEST(PacketMap, SoftmaxRowPassesNaNOnAndGivesMinusInfinityZero) {
  const AttentionPattern causal(true);
  const float inf = std::numeric_limits<float>::infinity();
  for (int n : {1, 7, 16, 17, 33}) {
    std::vector<float> all_inf(n, -inf), with_nan = Values(n, 4), one_inf = Values(n, 5);
    with_nan[n / 2] = std::numeric_limits<float>::quiet_NaN();
    one_inf[n - 1] = -inf;
    float lse = 0;
    attention_detail::SoftmaxVisibleRow(causal, n - 1, n, 0, n, all_inf.data(), &lse);
    for (float p : all_inf) EXPECT_TRUE(std::isnan(p)) << "n " << n;
    EXPECT_TRUE(std::isnan(lse));
    attention_detail::SoftmaxVisibleRow(causal, n - 1, n, 0, n, with_nan.data(), &lse);
    EXPECT_TRUE(std::isnan(with_nan[n / 2])) << "n " << n;
    EXPECT_TRUE(std::isnan(lse)) << "n " << n;
    if (n == 1) continue;
    attention_detail::SoftmaxVisibleRow(causal, n - 1, n, 0, n, one_inf.data(), &lse);
    EXPECT_LT(one_inf[n - 1], 1e-37f) << "n " << n;
    EXPECT_GE(one_inf[n - 1], 0.0f) << "n " << n;
    double total = 0;
    for (float p : one_inf) total += p;
    EXPECT_NEAR(total, 1.0, 1e-6) << "n " << n;
  }
}

// ZeroRows stores packets a column at a time: exactly the block's elements become 0, at every
// width (whole packets, a tail, both) and row stride, and nothing around them changes.
template <typename S>
void CheckZeroRows() {
  for (long rows : {0L, 1L, 5L}) {
    for (long cols = 0; cols <= 40; ++cols) {
      for (long extra : {0L, 3L, 17L}) {
        const long ld = cols + extra;
        SCOPED_TRACE("rows " + std::to_string(rows) + ", cols " + std::to_string(cols) + ", ld " +
                     std::to_string(ld));
        std::vector<S> buf(rows * ld + 8, S(-7));
        ZeroRows(buf.data() + 4, rows, cols, ld);
        for (long i = 0; i < static_cast<long>(buf.size()); ++i) {
          const long at = i - 4, r = at / std::max(ld, 1L), c = at - r * ld;
          const bool inside = at >= 0 && r < rows && c < cols;
          ASSERT_EQ(buf[i], inside ? S(0) : S(-7)) << i;
        }
      }
    }
  }
}

TEST(PacketMap, ZeroRowsClearsExactlyItsBlock) {
  CheckZeroRows<float>();
  CheckZeroRows<double>();
}

// TransposeHead moves whole packet tiles through registers and the rest element by element: at
// every T and D around the packet sizes (float 16/8/4, double 8/4/2), with a row stride wider
// than D, it is the element-by-element transpose, bit for bit.
template <typename S>
void CheckTransposeHead() {
  for (int T = 1; T <= 37; ++T) {
    for (int D : {1, 2, 3, 4, 7, 8, 9, 16, 17, 33}) {
      SCOPED_TRACE("T " + std::to_string(T) + ", D " + std::to_string(D));
      const long ld = D + 5;
      std::vector<S> x(T * ld);
      for (long i = 0; i < static_cast<long>(x.size()); ++i) x[i] = static_cast<S>(0.25 * i - 3);
      Mat<S> xt(D, T);  // NaN in every cell: one the transpose misses fails the comparison
      xt.setConstant(std::numeric_limits<S>::quiet_NaN());
      attention_detail::TransposeHead(x.data(), ld, T, D, xt);
      ASSERT_EQ(xt.rows(), D);
      ASSERT_EQ(xt.cols(), T);
      for (int t = 0; t < T; ++t)
        for (int d = 0; d < D; ++d) ASSERT_EQ(xt(d, t), x[t * ld + d]) << "t " << t << ", d " << d;
    }
  }
}

TEST(PacketMap, TransposeHeadIsTheElementTransposeInFloatAndDouble) {
  CheckTransposeHead<float>();
  CheckTransposeHead<double>();
}

}  // namespace
}  // namespace lexp
