#!/bin/sh
echo 'Helo'
