// SSA names that are Python keywords, builtins or names of the generated module.
func.func @f(%in: tensor<40x300xf32>, %fused_kernel_0: tensor<40x300xf32>, %range: tensor<300xf32>, %device: tensor<300xf32>, %dot_dtype: tensor<300xf32>) -> (tensor<40x300xf32>, tensor<40xf32>) {
  %float = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<40x300xf32>
  %min = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%fused_kernel_0, %range, %device, %dot_dtype : tensor<40x300xf32>, tensor<300xf32>, tensor<300xf32>, tensor<300xf32>) outs(%e : tensor<40x300xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %d: f32, %o: f32):
    %x = arith.addf %a, %b : f32
    %y = arith.mulf %x, %c : f32
    %lambda = arith.subf %y, %d : f32
    linalg.yield %lambda : f32
  } -> tensor<40x300xf32>
  %er = tensor.empty() : tensor<40xf32>
  %pid = linalg.fill ins(%float : f32) outs(%er : tensor<40xf32>) -> tensor<40xf32>
  %tl = linalg.reduce ins(%min : tensor<40x300xf32>) outs(%pid : tensor<40xf32>) dimensions = [1]
    (%v: f32, %acc: f32) {
      %s = arith.addf %v, %acc : f32
      linalg.yield %s : f32
    }
  func.return %min, %tl : tensor<40x300xf32>, tensor<40xf32>
}
