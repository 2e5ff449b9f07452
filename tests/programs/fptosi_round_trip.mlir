// Quantise to tenths: fptosi truncates toward zero, sitofp back.
#m = affine_map<(d0) -> (d0)>
func.func @q(%x: tensor<100xf32>) -> tensor<100xf32> {
  %e = tensor.empty() : tensor<100xf32>
  %r = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel"]} ins(%x : tensor<100xf32>) outs(%e : tensor<100xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.constant 10.0 : f32
    %m = arith.mulf %a, %s : f32
    %i = arith.fptosi %m : f32 to i32
    %f = arith.sitofp %i : i32 to f32
    %d = arith.divf %f, %s : f32
    linalg.yield %d : f32
  } -> tensor<100xf32>
  func.return %r : tensor<100xf32>
}
