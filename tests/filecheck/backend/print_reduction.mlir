// RUN: tilefuse-opt %s -p inline-calls -t triton | filecheck %s

// Row max and row sum of a 7 x 40 tensor, two rows of 64 lanes per program, as
// tile-and-fuse writes them: lanes past the row's end are replaced by the
// combiner's identity (`arith.select` on `linalg.index`). The lane test is
// computed once for both reductions, the load/store masks once per shape;
// NaN-propagating maximumf pulls in `_max_nan` (and its combiner), nothing else;
// no tl.dot, so no DOT_DTYPE parameter.

// CHECK-NOT:  def _prod(
// CHECK:      def _max_nan_combine(a, b):
// CHECK-NOT:  def _min_nan_combine(
// CHECK:      def _max_nan(x, axis: tl.constexpr):
// CHECK-NOT:  def _min_nan(

// CHECK-LABEL: def rows(x_ptr, x_s0, x_s1, m_ptr, m_s0, s_ptr, s_s0):
// CHECK-NEXT:     pid = tl.program_id(0)
// CHECK-NEXT:     i = pid % 4
// CHECK-NEXT:     offs0 = (i * 2) + tl.arange(0, 2)
// CHECK-NEXT:     offs1 = tl.arange(0, 64)
// CHECK-NEXT:     mask = (offs0[:, None] < 7) & (offs1[None, :] < 40)
// CHECK-NEXT:     xt = tl.load(x_ptr + offs0[:, None] * x_s0 + offs1[None, :] * x_s1, mask=mask, other=0.0).to(tl.float32)
// CHECK-NEXT:     fm = tl.full((2,), float("-inf"), tl.float32)
// CHECK-NEXT:     inside = (tl.arange(0, 64)[None, :] < 40)
// CHECK-NEXT:     sel = tl.where(inside, xt, float("-inf"))
// CHECK-NEXT:     red = _max_nan(sel, axis=1)
// CHECK-NEXT:     mt = tl.maximum(fm, red, propagate_nan=tl.PropagateNan.ALL)
// CHECK-NEXT:     fs = tl.full((2,), 0.0, tl.float32)
// CHECK-NEXT:     sel_1 = tl.where(inside, xt, 0.0)
// CHECK-NEXT:     red_1 = tl.sum(sel_1, axis=1)
// CHECK-NEXT:     st = (fs + red_1)
// CHECK-NEXT:     mask_1 = (offs0 < 7)
// CHECK-NEXT:     tl.store(m_ptr + offs0 * m_s0, mt.to(tl.float32), mask=mask_1)
// CHECK-NEXT:     tl.store(s_ptr + offs0 * s_s0, st.to(tl.float32), mask=mask_1)
// CHECK-EMPTY:
// CHECK:          rows[(4,)](x, *x.stride(), m, *m.stride(), s, *s.stride(), num_warps=4, num_stages=1)

func.func @rows(%x: tensor<7x40xf32>) -> (tensor<7xf32>, tensor<7xf32>) {
  %m, %s = tilefuse.group "rows" ins(%x : tensor<7x40xf32>) reason "reduction: max, sum" {
  ^bb0(%xa: tensor<7x40xf32>):
    %em = tensor.empty() : tensor<7xf32>
    %es = tensor.empty() : tensor<7xf32>
    %rm, %rs = tilefuse.tile_grid [4] outs(%em, %es : tensor<7xf32>, tensor<7xf32>) warps 4 stages 1 {
    ^bb0(%i: index, %om: tensor<7xf32>, %os: tensor<7xf32>):
      %c2 = arith.constant 2 : index
      %c0 = arith.constant 0 : index
      %row = arith.muli %i, %c2 : index
      %xt = tilefuse.load %xa[%row, %c0] : tensor<7x40xf32> -> tensor<2x64xf32>
      %ninf = arith.constant 0xff800000 : f32
      %e2 = tensor.empty() : tensor<2xf32>
      %fm = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%ninf : f32) outs(%e2 : tensor<2xf32>) {
      ^bb0(%v: f32, %o: f32):
        linalg.yield %v : f32
      } -> tensor<2xf32>
      %mt = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%xt : tensor<2x64xf32>) outs(%fm : tensor<2xf32>) {
      ^bb0(%in: f32, %acc: f32):
        %j = linalg.index 1 : index
        %n = arith.constant 40 : index
        %inside = arith.cmpi slt, %j, %n : index
        %id = arith.constant 0xff800000 : f32
        %sel = arith.select %inside, %in, %id : f32
        %mx = arith.maximumf %sel, %acc : f32
        linalg.yield %mx : f32
      } -> tensor<2xf32>
      %zero = arith.constant 0.0 : f32
      %fs = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%zero : f32) outs(%e2 : tensor<2xf32>) {
      ^bb0(%v: f32, %o: f32):
        linalg.yield %v : f32
      } -> tensor<2xf32>
      %st = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%xt : tensor<2x64xf32>) outs(%fs : tensor<2xf32>) {
      ^bb0(%in: f32, %acc: f32):
        %j = linalg.index 1 : index
        %n = arith.constant 40 : index
        %inside = arith.cmpi slt, %j, %n : index
        %id = arith.constant 0.0 : f32
        %sel = arith.select %inside, %in, %id : f32
        %sum = arith.addf %acc, %sel : f32
        linalg.yield %sum : f32
      } -> tensor<2xf32>
      tilefuse.store %mt into %om[%row] : tensor<2xf32> into tensor<7xf32>
      tilefuse.store %st into %os[%row] : tensor<2xf32> into tensor<7xf32>
    } -> (tensor<7xf32>, tensor<7xf32>)
    tilefuse.yield %rm, %rs : tensor<7xf32>, tensor<7xf32>
  } -> (tensor<7xf32>, tensor<7xf32>)
  func.return %m, %s : tensor<7xf32>, tensor<7xf32>
}
