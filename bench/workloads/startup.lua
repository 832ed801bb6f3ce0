-- `require 'moontorch'` and exit: run.lua times whole processes of this.
dofile((arg[0]:gsub('[^/]*$', '')) .. 'common.lua')
require 'moontorch'
