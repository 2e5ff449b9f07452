func.func @f(%a: tensor<4x6xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %r = linalg.reduce ins(%a : tensor<4x6xf32>) outs(%init : tensor<4xf32>) dimensions = [5]
    (%x: f32, %acc: f32) {
      %s = arith.addf %x, %acc : f32
      linalg.yield %s : f32
    }
  func.return %r : tensor<4xf32>
}
