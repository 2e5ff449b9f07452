func.func @s(%x: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %s = tensor.extract_slice %x[6, 0] [4, 8] [1, 1] : tensor<8x8xf32> to tensor<4x8xf32>
  func.return %s : tensor<4x8xf32>
}
