// Function-level scalar math on constants (a 1/sqrt(d) scale), a fill of a computed
// scalar, and a tensor.cast between equal static types: folded before fusion.
#m = affine_map<(d0) -> (d0)>
func.func @sh(%x: tensor<100xf32>) -> (tensor<100xf32>, tensor<10x20xf32>) {
  %a = arith.constant 64.0 : f32
  %b = math.sqrt %a : f32
  %one = arith.constant 1.0 : f32
  %scale = arith.divf %one, %b : f32
  %e = tensor.empty() : tensor<100xf32>
  %r = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel"]} ins(%x : tensor<100xf32>) outs(%e : tensor<100xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.mulf %v, %scale : f32
    linalg.yield %s : f32
  } -> tensor<100xf32>
  %three = arith.constant 3.0 : f32
  %half = arith.constant 0.5 : f32
  %c = arith.mulf %three, %half : f32
  %e2 = tensor.empty() : tensor<10x20xf32>
  %f = linalg.fill ins(%c : f32) outs(%e2 : tensor<10x20xf32>) -> tensor<10x20xf32>
  %g = tensor.cast %f : tensor<10x20xf32> to tensor<10x20xf32>
  func.return %r, %g : tensor<100xf32>, tensor<10x20xf32>
}
