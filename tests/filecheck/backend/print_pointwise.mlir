// RUN: tilefuse-opt %s -p inline-calls -t triton | filecheck %s

// The printer on a hand-tiled pointwise group (`-p inline-calls` has nothing to
// do here, so only the printer runs; `-t triton` without `-p` would run the
// default pipeline first). Rows are masked (10 = 2.5 tiles of 4), the columns
// too (24 of 32 lanes): one mask, shared by the load and the store. Names come
// from the IR; tanh and the bf16 stores pull in exactly their helpers.

// CHECK:      import triton.language as tl
// CHECK-NOT:  libdevice
// CHECK:      _ON_GPU = tl.constexpr(
// CHECK-NOT:  def _neg(
// CHECK:      def _tanh(x):
// CHECK-NOT:  def _powf(
// CHECK:      def _round_bf16(x):
// CHECK:      def _to_bf16(x):
// CHECK-NOT:  def _max_nan(

// CHECK:      # k0: pointwise: tanh
// CHECK-NEXT: # tile 4x32, grid 3, working set 0.8 KB of 227 KB{{.*}}
// CHECK-NEXT: # from {{.*}}print_pointwise.mlir:42:3
// CHECK-NEXT: @triton.jit
// CHECK-NEXT: def k0(x_ptr, x_s0, x_s1, y_ptr, y_s0, y_s1):
// CHECK-NEXT:     pid = tl.program_id(0)
// CHECK-NEXT:     i = pid % 3
// CHECK-NEXT:     offs0 = (i * 4) + tl.arange(0, 4)
// CHECK-NEXT:     offs1 = tl.arange(0, 32)
// CHECK-NEXT:     mask = (offs0[:, None] < 10) & (offs1[None, :] < 24)
// CHECK-NEXT:     xt = tl.load(x_ptr + offs0[:, None] * x_s0 + offs1[None, :] * x_s1, mask=mask, other=0.0).to(tl.float32)
// CHECK-NEXT:     th = _tanh(xt)
// CHECK-NEXT:     scaled = (th * 0.5)
// CHECK-NEXT:     t = (_round_bf16(scaled)).to(tl.float32)
// CHECK-NEXT:     tl.store(y_ptr + offs0[:, None] * y_s0 + offs1[None, :] * y_s1, _to_bf16(t), mask=mask)
// CHECK-EMPTY:
// CHECK:      KERNELS = ['k0']
// CHECK:      def gelu_ish(x, *, dot_dtype=None):
// CHECK:          y = torch.empty((10, 24), dtype=torch.bfloat16, device=device)
// CHECK-NEXT:     k0[(3,)](x, *x.stride(), y, *y.stride(), num_warps=4, num_stages=1)
// CHECK-NEXT:     return y

func.func @gelu_ish(%x: tensor<10x24xf32>) -> tensor<10x24xbf16> {
  %y = tilefuse.group "k0" ins(%x : tensor<10x24xf32>) reason "pointwise: tanh" {
  ^bb0(%xa: tensor<10x24xf32>):
    %e = tensor.empty() : tensor<10x24xbf16>
    %r = tilefuse.tile_grid [3] outs(%e : tensor<10x24xbf16>) warps 4 stages 1 attributes {plan = #tilefuse.tile_plan<extents = [10, 24], blocks = [4, 32], modes = [grid, whole], warps = 4, stages = 1, working_set = 768, smem_budget = 232448, regs = 36, occupancy = 0.75, order = row, dot = none>} {
    ^bb0(%i: index, %out: tensor<10x24xbf16>):
      %c4 = arith.constant 4 : index
      %c0 = arith.constant 0 : index
      %row = arith.muli %i, %c4 : index
      %xt = tilefuse.load %xa[%row, %c0] : tensor<10x24xf32> -> tensor<4x32xf32>
      %et = tensor.empty() : tensor<4x32xbf16>
      %gt = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%xt : tensor<4x32xf32>) outs(%et : tensor<4x32xbf16>) {
      ^bb0(%a: f32, %o: bf16):
        %th = math.tanh %a : f32
        %half = arith.constant 0.5 : f32
        %scaled = arith.mulf %th, %half : f32
        %t = arith.truncf %scaled : f32 to bf16
        linalg.yield %t : bf16
      } -> tensor<4x32xbf16>
      tilefuse.store %gt into %out[%row, %c0] : tensor<4x32xbf16> into tensor<10x24xbf16>
    } -> (tensor<10x24xbf16>)
    tilefuse.yield %r : tensor<10x24xbf16>
  } -> (tensor<10x24xbf16>)
  func.return %y : tensor<10x24xbf16>
}
