/* occupancy.h: the theoretical occupancy of launch shapes on sm_90 (2048 threads, 32
 * blocks, 64 Ki registers and 228 KiB of shared memory per SM, 1 KiB of it reserved
 * per block), each limited by another resource, worked out by hand from those limits;
 * and the shapes no SM can hold. */
#include <errno.h>
#include <string.h>

#include "kernels/core/occupancy.h"
#include "tests/check.h"
#include "tests/runner.h"

static struct occupancy at(int threads, int registers, int static_shared, int dynamic_shared) {
  struct occupancy o;
  char why[200];
  struct occupancy_launch l = {90, threads, registers, static_shared, dynamic_shared};
  int rc = occupancy_theoretical(&l, &o, why, sizeof why);
  if (rc) CHECK_FAIL_("occupancy_theoretical: %s", why);
  return o;
}

/* 40 registers: a warp takes 1280, rounded to 256s; 16 Ki registers per quarter SM
 * hold 12 warps, 48 in all: 6 blocks of 8 warps. */
static void test_registers(void) {
  struct occupancy o = at(256, 40, 0, 0);
  CHECK_INT_EQ(o.blocks_per_sm, 6);
  CHECK_INT_EQ(o.warps_per_sm, 48);
  CHECK_INT_EQ(o.max_warps_per_sm, 64);
  CHECK(o.fraction == 0.75);
  CHECK_STR_EQ(o.limiter, "registers");
  CHECK_INT_EQ(o.blocks_by_registers, 6);
  CHECK_INT_EQ(o.registers_per_block, 40 * 256);
}

/* 32 registers and 256 threads: 8 blocks fill the SM's 64 warps exactly. */
static void test_full(void) {
  struct occupancy o = at(256, 32, 0, 0);
  CHECK_INT_EQ(o.blocks_per_sm, 8);
  CHECK(o.fraction == 1.0);
  CHECK_INT_EQ(o.blocks_by_warps, 8);
}

/* 100 KiB of dynamic shared memory (+1 KiB reserved): two blocks in 228 KiB. */
static void test_shared(void) {
  struct occupancy o = at(128, 32, 0, 100 * 1024);
  CHECK_INT_EQ(o.blocks_per_sm, 2);
  CHECK_INT_EQ(o.warps_per_sm, 8);
  CHECK_STR_EQ(o.limiter, "shared_memory");
  CHECK_INT_EQ(o.shared_bytes_per_block, 101 * 1024);
  /* static and dynamic count together */
  o = at(128, 32, 50 * 1024, 50 * 1024);
  CHECK_INT_EQ(o.blocks_per_sm, 2);
}

/* One warp per block: the SM's 32 blocks stop it at half its warps. */
static void test_blocks(void) {
  struct occupancy o = at(32, 16, 0, 0);
  CHECK_INT_EQ(o.blocks_per_sm, 32);
  CHECK(o.fraction == 0.5);
  CHECK_STR_EQ(o.limiter, "blocks");
}

static void test_refused(void) {
  struct occupancy o;
  char why[200];
  struct occupancy_launch l = {90, 1024, 255, 0, 0}; /* 255 x 1024 registers > 64 Ki */
  CHECK_INT_EQ(occupancy_theoretical(&l, &o, why, sizeof why), -EINVAL);
  CHECK(strstr(why, "no block of 1024 threads") != NULL);
  l = (struct occupancy_launch){90, 128, 32, 0, 228 * 1024}; /* past 227 KiB */
  CHECK_INT_EQ(occupancy_theoretical(&l, &o, why, sizeof why), -EINVAL);
  l = (struct occupancy_launch){75, 128, 32, 0, 0};
  CHECK_INT_EQ(occupancy_theoretical(&l, &o, why, sizeof why), -ENOTSUP);
  CHECK(strstr(why, "sm_75") != NULL);
}

static const struct test_case cases[] = {
    TEST(test_registers), TEST(test_full),    TEST(test_shared),
    TEST(test_blocks),    TEST(test_refused), TEST_END,
};
const struct test_suite test_suite = {.cases = cases};
