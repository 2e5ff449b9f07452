// RUN: tilefuse-opt %s -p inline-calls -t triton | filecheck %s

// A bf16 matmul tile program, 16 x 16 per program in grouped order, K in a loop
// of 32: one tl.dot per step on operands kept in their storage type, accumulated
// in place (`acc = tl.dot(..., acc)`, no copies). The kernel takes DOT_DTYPE and
// DOT_PRECISION, and the host passes bf16 operands with tf32 precision (the
// interpreter's runtime passes fp32 as `dot_dtype`). The batch index of the unit
// batch dim is a plain scalar offset (no `* 1`).

// CHECK-LABEL: def mm(a_ptr, a_s0, a_s1, a_s2, b_ptr, b_s0, b_s1, c_ptr, c_s0, c_s1, c_s2, DOT_DTYPE: tl.constexpr, DOT_PRECISION: tl.constexpr):
// CHECK-NEXT:     pid = tl.program_id(0)
// CHECK-NEXT:     tile = pid % 6
// CHECK-NEXT:     group = tile // 4
// CHECK-NEXT:     first_m = group * 2
// CHECK-NEXT:     rows = min(3 - first_m, 2)
// CHECK-NEXT:     i = first_m + (tile % rows)
// CHECK-NEXT:     j = (tile % 4) // rows
// CHECK-NEXT:     p = (pid // 6 // 1) % 2
// CHECK-NEXT:     prod = tl.full((16, 16), 0.0, tl.float32)
// CHECK-NEXT:     for k in range(0, 64, 32):
// CHECK-NEXT:         offs1 = (i * 16) + tl.arange(0, 16)
// CHECK-NEXT:         offs2 = k + tl.arange(0, 32)
// CHECK-NEXT:         mask = (offs1[:, None] < 40)
// CHECK-NEXT:         at = tl.load(a_ptr + p * a_s0 + offs1[:, None] * a_s1 + offs2[None, :] * a_s2, mask=mask, other=0.0)
// CHECK-NEXT:         offs1_1 = (j * 16) + tl.arange(0, 16)
// CHECK-NEXT:         bt = tl.load(b_ptr + offs2[:, None] * b_s0 + offs1_1[None, :] * b_s1)
// CHECK-NEXT:         prod = tl.dot(at.to(DOT_DTYPE), bt.to(DOT_DTYPE), prod, input_precision=DOT_PRECISION)
// CHECK-NEXT:     [[ROWS:offs1_[0-9]+]] = (i * 16) + tl.arange(0, 16)
// CHECK-NEXT:     [[COLS:offs2_[0-9]+]] = (j * 16) + tl.arange(0, 16)
// CHECK-NEXT:     [[MASK:mask_[0-9]+]] = ([[ROWS]][:, None] < 40)
// CHECK-NEXT:     tl.store(c_ptr + p * c_s0 + [[ROWS]][:, None] * c_s1 + [[COLS]][None, :] * c_s2, prod.to(tl.float32), mask=[[MASK]])
// CHECK:          mm[(12,)](a, *a.stride(), b, *b.stride(), c, *c.stride(), DOT_DTYPE=tl.bfloat16 if dot_dtype is None else dot_dtype, DOT_PRECISION="tf32", num_warps=4, num_stages=3)

func.func @mm(%a: tensor<2x40x64xbf16>, %b: tensor<64x32xbf16>) -> tensor<2x40x32xf32> {
  %c = tilefuse.group "mm" ins(%a, %b : tensor<2x40x64xbf16>, tensor<64x32xbf16>) reason "contraction: matmul" {
  ^bb0(%aa: tensor<2x40x64xbf16>, %ba: tensor<64x32xbf16>):
    %e = tensor.empty() : tensor<2x40x32xf32>
    %r = tilefuse.tile_grid [2, 3, 2] outs(%e : tensor<2x40x32xf32>) warps 4 stages 3 attributes {plan = #tilefuse.tile_plan<extents = [2, 40, 32, 64], blocks = [1, 16, 16, 32], modes = [grid, grid, grid, loop], warps = 4, stages = 3, working_set = 12288, smem_budget = 232448, regs = 60, occupancy = 0.5, order = grouped<1, 2, 2>, dot = "bf16">} {
    ^bb0(%p: index, %i: index, %j: index, %out: tensor<2x40x32xf32>):
      %c16 = arith.constant 16 : index
      %c1 = arith.constant 1 : index
      %batch = arith.muli %p, %c1 : index
      %row = arith.muli %i, %c16 : index
      %col = arith.muli %j, %c16 : index
      %zero = arith.constant 0.0 : f32
      %et = tensor.empty() : tensor<1x16x16xf32>
      %init = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%zero : f32) outs(%et : tensor<1x16x16xf32>) {
      ^bb0(%z: f32, %o: f32):
        linalg.yield %z : f32
      } -> tensor<1x16x16xf32>
      %lb = arith.constant 0 : index
      %ub = arith.constant 64 : index
      %step = arith.constant 32 : index
      %prod = scf.for %k = %lb to %ub step %step iter_args(%acc = %init) -> (tensor<1x16x16xf32>) {
        %at = tilefuse.load %aa[%batch, %row, %k] : tensor<2x40x64xbf16> -> tensor<1x16x32xbf16>
        %bt = tilefuse.load %ba[%k, %col] : tensor<64x32xbf16> -> tensor<32x16xbf16>
        %next = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d3, d2)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%at, %bt : tensor<1x16x32xbf16>, tensor<32x16xbf16>) outs(%acc : tensor<1x16x16xf32>) {
        ^bb0(%x: bf16, %y: bf16, %s: f32):
          %xf = arith.extf %x : bf16 to f32
          %yf = arith.extf %y : bf16 to f32
          %m = arith.mulf %xf, %yf : f32
          %n = arith.addf %s, %m : f32
          linalg.yield %n : f32
        } -> tensor<1x16x16xf32>
        scf.yield %next : tensor<1x16x16xf32>
      }
      tilefuse.store %prod into %out[%batch, %row, %col] : tensor<1x16x16xf32> into tensor<2x40x32xf32>
    } -> (tensor<2x40x32xf32>)
    tilefuse.yield %r : tensor<2x40x32xf32>
  } -> (tensor<2x40x32xf32>)
  func.return %c : tensor<2x40x32xf32>
}
