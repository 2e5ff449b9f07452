func.func @s(%x: tensor<8xf32>, %a: f32) -> tensor<8xf32> {
  func.return %x : tensor<8xf32>
}
