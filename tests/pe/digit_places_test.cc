// The digit-place embeddings against their papers' rules written out by hand. Abacus (McLeish et
// al. 2024, arXiv:2405.17399): a digit's vector is row k + r of the table, r its place in its run
// of digits (1 for the first written), every other token row 0; k ~ U{0..max_k} per training batch
// and 0 in evaluation. Position coupling (Cho et al. 2024, arXiv:2405.20671): the ids of the
// reference's AdditionDatasetWithCoupledPositions, recomputed here in its own (most significant
// first) layout, mapped onto lexp's reversed one. The places of the examples are spelt out, not
// computed by a lexp helper.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "nn/check.h"
#include "nn/position_hooks.h"
#include "nn/rng.h"
#include "pe/digit_places.h"
#include "pe/registry.h"

namespace lexp {
namespace {

constexpr int kC = 4, kDigits = 10, kMaxLength = 32;

std::unique_ptr<PositionEncoding<double>> MakeAbacus(int max_k, bool causal = true,
                                                     int digits = kDigits, int rows = 64) {
  return CreateEncoding<double>("abacus",
                                {{"max_k", std::to_string(max_k)}, {"rows", std::to_string(rows)}},
                                EncodingShape{kC, 2, 1, causal, kMaxLength, 16, 13, digits});
}

// Row r of the table is (100 r, 100 r + 1, ...): a row read shows as its index.
void NumberRows(PositionEncoding<double>& enc) {
  ParamRef<double> table = enc.Parameters().at(0);
  ASSERT_EQ(table.name, "pe." + enc.Name() + ".table");
  const long rows = static_cast<long>(table.shape[0]);
  for (long r = 0; r < rows; ++r)
    for (int c = 0; c < kC; ++c) table.value[r * kC + c] = 100.0 * r + c;
}

TEST(Abacus, PlacesCountEachRunOfDigitsFromOne) {
  // "35+678=310" reversed-format tokens: 3 5 + 6 7 8 = 3 1 0 (digits 0..9, 10 '+', 12 '=').
  const std::vector<int> tokens = {3, 5, 10, 6, 7, 8, 12, 3, 1, 0};
  EXPECT_EQ(DigitPlaces(tokens.data(), 10, kDigits),
            (std::vector<int>{1, 2, 0, 1, 2, 3, 0, 1, 2, 3}));
  const std::vector<int> none = {10, 11, 12};
  EXPECT_EQ(DigitPlaces(none.data(), 3, kDigits), (std::vector<int>{0, 0, 0}));
  // Fewer digit symbols: 7 is not a digit when only 0..4 are.
  const std::vector<int> mixed = {1, 7, 2, 3};
  EXPECT_EQ(DigitPlaces(mixed.data(), 4, 5), (std::vector<int>{1, 0, 1, 2}));
}

TEST(Abacus, EmbeddingIsTheTableRowOfEachDigitsPlacePlusTheOffset) {
  auto enc = MakeAbacus(20);
  NumberRows(*enc);
  // Two sequences of the batch, 6 tokens each.
  const std::vector<int> tokens = {4, 4, 10, 9, 12, 1,  //
                                   12, 0, 1, 2, 3, 10};
  const std::vector<int> places = {1, 2, 0, 1, 0, 1,  //
                                   0, 1, 2, 3, 4, 0};
  for (const long k : {0L, 7L}) {
    std::vector<double> pos(6);
    for (int t = 0; t < 6; ++t) pos[t] = static_cast<double>(k + t);
    enc->Prepare(pos, 5);
    Mat<double> x = Mat<double>::Constant(12, kC, 0.5);
    enc->AddEmbedding(pos, tokens, 2, x);
    for (int i = 0; i < 12; ++i) {
      const long row = places[i] == 0 ? 0 : k + places[i];
      for (int c = 0; c < kC; ++c)
        EXPECT_DOUBLE_EQ(x(i, c), 0.5 + 100.0 * row + c) << "k " << k << " token " << i;
    }
  }
}

TEST(Abacus, OneOffsetPerTrainingBatchUniformOverZeroToMaxKAndNoneInEvaluation) {
  auto enc = MakeAbacus(5);
  Rng rng(3);
  std::set<double> offsets;
  std::vector<double> pos;
  for (int draw = 0; draw < 400; ++draw) {
    enc->PositionIds(8, true, rng, pos);
    ASSERT_EQ(pos.size(), 8u);
    for (int t = 1; t < 8; ++t) ASSERT_EQ(pos[t], pos[0] + t);  // one k for the whole batch
    offsets.insert(pos[0]);
  }
  EXPECT_EQ(offsets, (std::set<double>{0, 1, 2, 3, 4, 5}));
  enc->PositionIds(8, false, rng, pos);
  for (int t = 0; t < 8; ++t) EXPECT_EQ(pos[t], t);
  auto fixed = MakeAbacus(0);
  fixed->PositionIds(4, true, rng, pos);
  EXPECT_EQ(pos, (std::vector<double>{0, 1, 2, 3}));
}

TEST(Abacus, BackwardSendsEachRowsGradientToTheRowItRead) {
  auto enc = MakeAbacus(3);
  const std::vector<int> tokens = {2, 2, 11, 2};
  const std::vector<double> pos = {3, 4, 5, 6};  // k = 3
  enc->Prepare(pos, 3);
  Mat<double> d_x(4, kC);
  for (int i = 0; i < 4; ++i)
    for (int c = 0; c < kC; ++c) d_x(i, c) = 10.0 * i + c;
  enc->EmbeddingBackward(pos, tokens, 1, d_x);
  ParamRef<double> table = enc->Parameters().at(0);
  auto grad = [&](long r, int c) { return table.grad[r * kC + c]; };
  for (int c = 0; c < kC; ++c) {
    EXPECT_DOUBLE_EQ(grad(0, c), 20.0 + c);                   // '+' (token 11) reads row 0
    EXPECT_DOUBLE_EQ(grad(4, c), (0.0 + c) + (30.0 + c));     // place 1 + k: tokens 0 and 3
    EXPECT_DOUBLE_EQ(grad(5, c), 10.0 + c);                   // place 2 + k: token 1
    EXPECT_DOUBLE_EQ(grad(1, c), 0.0);                        // never read
  }
}

TEST(Abacus, RefusesTasksWithoutDigitsTheEncoderLayoutAndBadOptions) {
  auto message = [](auto f) {
    try {
      f();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([] { MakeAbacus(9, true, 0); }).find("needs a task whose symbols are digits"),
            std::string::npos);
  EXPECT_NE(message([] { MakeAbacus(9, false); }).find("model.layout = \"decoder\""),
            std::string::npos);
  EXPECT_NE(message([] { MakeAbacus(-1); }).find("option 'max_k' = '-1' must be >= 0"), std::string::npos);
  EXPECT_NE(message([] { MakeAbacus(99, true, kDigits, 100); }).find("rows must be > max_k + 1"),
            std::string::npos);
  EXPECT_TRUE(FindEncoding("abacus").reads_digits);
}

TEST(Abacus, APlacePastTheTableIsRefusedNotClamped) {
  auto enc = MakeAbacus(2, true, kDigits, 35);
  std::vector<int> tokens(40, 1);  // a run of 40 digits: place 35 and on
  std::vector<double> pos(40);
  for (int t = 0; t < 40; ++t) pos[t] = t;
  enc->Prepare(pos, 39);
  Mat<double> x = Mat<double>::Zero(40, kC);
  EXPECT_THROW(enc->AddEmbedding(pos, tokens, 1, x), InputError);
}

std::unique_ptr<PositionEncoding<double>> MakeCoupling(int max_start, int rows = 64) {
  return CreateEncoding<double>(
      "position_coupling", {{"max_start", std::to_string(max_start)}, {"rows", std::to_string(rows)}},
      EncodingShape{kC, 2, 1, true, kMaxLength, 16, 13, kDigits});
}

// The row each token of one sequence reads at offset k (rows numbered by NumberRows).
std::vector<long> RowsRead(PositionEncoding<double>& enc, const std::vector<int>& tokens, long k) {
  const int T = static_cast<int>(tokens.size());
  std::vector<double> pos(T);
  for (int t = 0; t < T; ++t) pos[t] = static_cast<double>(k + t);
  enc.Prepare(pos, T - 1);
  Mat<double> x = Mat<double>::Zero(T, kC);
  enc.AddEmbedding(pos, tokens, 1, x);
  std::vector<long> rows(T);
  for (int t = 0; t < T; ++t) rows[t] = std::lround(x(t, 0) / 100.0);
  return rows;
}

TEST(PositionCoupling, IdsAreTheReferencesCoupledPositionsInTheReversedLayout) {
  // 35 + 678 = 713. The reference (src/data/addition.py, padding off, start 1): max_len = 3,
  // end = start + max_len + 1 = 5; a "35" at range(end - 2, end + 1) = 3, 4 and its '+' at 5;
  // b "678" at 2, 3, 4 and '=' at 5; the answer "713" at range(end - 3, end) = 2, 3, 4, written
  // reversed "317" at 4, 3, 2. Its id of a digit of significance s is end - 1 - s, of '+' and '='
  // end. In lexp's layout every number is reversed: 5 3 + 8 7 6 = 3 1 7 0 (the sum on n + 1
  // digits), and the id is k + (end - reference id): the units digits k + 1, operators k.
  const std::vector<int> tokens = {5, 3, 10, 8, 7, 6, 12, 3, 1, 7, 0};
  const std::vector<int> reference_ids = {4, 3, 5, 4, 3, 2, 5, 4, 3, 2, 1};  // 0 of 0713: end-4
  auto enc = MakeCoupling(20);
  NumberRows(*enc);
  for (const long k : {0L, 9L}) {
    const std::vector<long> rows = RowsRead(*enc, tokens, k);
    for (size_t t = 0; t < tokens.size(); ++t)
      EXPECT_EQ(rows[t], k + 5 - reference_ids[t]) << "k " << k << " token " << t;
  }
  // Digits of equal significance share a row across both operands and the answer.
  const std::vector<long> rows = RowsRead(*enc, tokens, 0);
  EXPECT_EQ(rows[0], rows[3]);
  EXPECT_EQ(rows[3], rows[7]);
  EXPECT_EQ(rows[1], rows[8]);
}

TEST(PositionCoupling, NonDigitsReadTheOffsetRowWhereAbacusReadsRowZero) {
  // Negative control of the one rule that differs: the operator and separator.
  const std::vector<int> tokens = {4, 10, 2, 12, 6};
  auto coupling = MakeCoupling(20);
  auto abacus = MakeAbacus(20);
  NumberRows(*coupling);
  NumberRows(*abacus);
  EXPECT_EQ(RowsRead(*coupling, tokens, 7), (std::vector<long>{8, 7, 8, 7, 8}));
  EXPECT_EQ(RowsRead(*abacus, tokens, 7), (std::vector<long>{8, 0, 8, 0, 8}));
}

TEST(PositionCoupling, OneStartPerTrainingBatchUniformOverZeroToMaxStartAndNoneInEvaluation) {
  auto enc = MakeCoupling(4);
  Rng rng(5);
  std::set<double> starts;
  std::vector<double> pos;
  for (int draw = 0; draw < 300; ++draw) {
    enc->PositionIds(6, true, rng, pos);
    for (int t = 1; t < 6; ++t) ASSERT_EQ(pos[t], pos[0] + t);
    starts.insert(pos[0]);
  }
  EXPECT_EQ(starts, (std::set<double>{0, 1, 2, 3, 4}));
  enc->PositionIds(3, false, rng, pos);
  EXPECT_EQ(pos, (std::vector<double>{0, 1, 2}));
}

TEST(PositionCoupling, BackwardSendsEachRowsGradientToTheRowItRead) {
  auto enc = MakeCoupling(3);
  const std::vector<int> tokens = {2, 11, 2, 2};
  const std::vector<double> pos = {2, 3, 4, 5};  // k = 2
  enc->Prepare(pos, 3);
  Mat<double> d_x(4, kC);
  for (int i = 0; i < 4; ++i)
    for (int c = 0; c < kC; ++c) d_x(i, c) = 10.0 * i + c;
  enc->EmbeddingBackward(pos, tokens, 1, d_x);
  ParamRef<double> table = enc->Parameters().at(0);
  EXPECT_EQ(table.name, "pe.position_coupling.table");
  auto grad = [&](long r, int c) { return table.grad[r * kC + c]; };
  for (int c = 0; c < kC; ++c) {
    EXPECT_DOUBLE_EQ(grad(2, c), 10.0 + c);                // '+' reads row k
    EXPECT_DOUBLE_EQ(grad(3, c), (0.0 + c) + (20.0 + c));  // significance 0: tokens 0 and 2
    EXPECT_DOUBLE_EQ(grad(4, c), 30.0 + c);                // significance 1: token 3
    EXPECT_DOUBLE_EQ(grad(0, c), 0.0);                     // never read
  }
}

TEST(PositionCoupling, RefusesBadOptionsAndNamesItself) {
  auto message = [](auto f) {
    try {
      f();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([] { MakeCoupling(-1); }).find("encoding 'position_coupling': option 'max_start' = '-1' must be >= 0"),
            std::string::npos);
  EXPECT_NE(message([] { MakeCoupling(10, 20); }).find("set rows to at least 43"),
            std::string::npos);
  EXPECT_TRUE(FindEncoding("position_coupling").reads_digits);
}

}  // namespace
}  // namespace lexp
