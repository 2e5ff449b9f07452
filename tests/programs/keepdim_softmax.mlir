// Softmax as torch-mlir prints it: keep-dim statistics in tensor<Nx1> read through
// constant-0 map results.
#x = affine_map<(d0, d1) -> (d0, d1)>
#k = affine_map<(d0, d1) -> (d0, 0)>
func.func @sm(%x: tensor<37x300xf32>) -> tensor<37x300xf32> {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<37x1xf32>
  %im = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<37x1xf32>) -> tensor<37x1xf32>
  %m = linalg.generic {indexing_maps = [#x, #k], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<37x300xf32>) outs(%im : tensor<37x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<37x1xf32>
  %e = tensor.empty() : tensor<37x300xf32>
  %ex = linalg.generic {indexing_maps = [#x, #k, #x], iterator_types = ["parallel", "parallel"]} ins(%x, %m : tensor<37x300xf32>, tensor<37x1xf32>) outs(%e : tensor<37x300xf32>) {
  ^bb0(%a: f32, %mm: f32, %o: f32):
    %d = arith.subf %a, %mm : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<37x300xf32>
  %is = linalg.fill ins(%zero : f32) outs(%e1 : tensor<37x1xf32>) -> tensor<37x1xf32>
  %s = linalg.generic {indexing_maps = [#x, #k], iterator_types = ["parallel", "reduction"]} ins(%ex : tensor<37x300xf32>) outs(%is : tensor<37x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<37x1xf32>
  %y = linalg.generic {indexing_maps = [#x, #k, #x], iterator_types = ["parallel", "parallel"]} ins(%ex, %s : tensor<37x300xf32>, tensor<37x1xf32>) outs(%e : tensor<37x300xf32>) {
  ^bb0(%a: f32, %t: f32, %o: f32):
    %r = arith.divf %a, %t : f32
    linalg.yield %r : f32
  } -> tensor<37x300xf32>
  func.return %y : tensor<37x300xf32>
}
