// RUN: tilefuse-opt %s --emit triton | filecheck %s
// RUN: tilefuse-opt %s --emit triton --target v100 | filecheck %s --check-prefix=V100

// Row softmax over 37 x 300: one kernel, the whole row (512 lanes) in the tile,
// masked loads/stores on both dims (one mask), max and sum reductions, no tl.dot
// (so no DOT_DTYPE parameter); the header names the group's root op, the last generic.

// CHECK:      # fused_kernel_0: reduction: reduce_maximum + sub + reduce_add + div (6 ops)
// CHECK-NEXT: # tile {{[0-9]+}}x512, grid
// CHECK-NEXT: # from {{.*}}emit_triton.mlir:50:3
// CHECK-NEXT: @triton.jit
// CHECK-NEXT: def fused_kernel_0(x_ptr, x_s0, x_s1, y_ptr, y_s0, y_s1):
// CHECK:        mask = ({{.*}} < 37) & ({{.*}} < 300)
// CHECK-NEXT:   x = tl.load(x_ptr + {{.*}}, mask=mask, other=0.0).to(tl.float32)
// CHECK:        _max_nan(
// CHECK:        tl.exp(
// CHECK:        tl.sum(
// CHECK:        tl.store(y_ptr + {{.*}}, mask=mask)
// CHECK-NOT:  tl.dot
// CHECK:      KERNELS = ['fused_kernel_0']
// CHECK:      def softmax(x, *, dot_dtype=None):
// CHECK:        y = torch.empty((37, 300), dtype=torch.float32, device=device)
// CHECK:        fused_kernel_0[({{[0-9]+}},)](x, *x.stride(), y, *y.stride(), num_warps
// CHECK:        return y

// V100: # tile {{[0-9]+}}x512, grid {{[0-9]+}}, working set {{.*}} of 96 KB
func.func @softmax(%x: tensor<37x300xf32>) -> tensor<37x300xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %er = tensor.empty() : tensor<37xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%er : tensor<37xf32>) -> tensor<37xf32>
  %m = linalg.reduce ins(%x : tensor<37x300xf32>) outs(%fm : tensor<37xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %v = arith.maximumf %in, %acc : f32
      linalg.yield %v : f32
    }
  %e = tensor.empty() : tensor<37x300xf32>
  %ex = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %m : tensor<37x300xf32>, tensor<37xf32>) outs(%e : tensor<37x300xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<37x300xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%er : tensor<37xf32>) -> tensor<37xf32>
  %s = linalg.reduce ins(%ex : tensor<37x300xf32>) outs(%fs : tensor<37xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %v = arith.addf %in, %acc : f32
      linalg.yield %v : f32
    }
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ex, %s : tensor<37x300xf32>, tensor<37xf32>) outs(%e : tensor<37x300xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<37x300xf32>
  func.return %y : tensor<37x300xf32>
}
