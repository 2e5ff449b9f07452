func.func private @ext(tensor<4xf32>) -> tensor<4xf32>
